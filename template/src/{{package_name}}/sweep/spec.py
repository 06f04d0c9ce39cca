"""The sweep file, checked whole before anything runs: a bad key or value is refused in one line
that names it (configs/sweep.toml describes the keys)."""

from __future__ import annotations

import contextlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from ..config import MONITORS, ConfigError, flatten, load_config, read_toml
from ..runtime.errors import did_you_mean

PACKAGE = __package__.rpartition(".")[0]  # the project's package: trials run its `train`
OPTIONS = {"trials": int, "sampler": str, "seed": int, "pruner": str, "prune_after": int, "storage": str}
TOP = {"config": str, "metric": str, "mode": str, "seeds": list, "folds": int, **OPTIONS}
TOP |= dict.fromkeys(("fixed", "grid", "space", "random"), dict)
CHOICES = {
    "mode": ("min", "max"),
    "sampler": ("tpe", "random", "grid"),
    "pruner": ("median", "hyperband", "none"),
}
DISTRIBUTIONS = ("log_uniform", "uniform", "int", "choice")
# Config keys the sweep sets for every run itself
RESERVED = ("config", "seed", "data.fold", "data.folds", "runs_dir", "run_name", "resume")


class SweepError(ValueError):
    """A bad sweep file or command line, in one line for the user."""


@dataclass(frozen=True)
class Sweep:
    file: Path
    options: dict[str, Any]  # OPTIONS, defaults filled in, and whether the sweep sets `threads`
    fixed: dict[str, Any]  # every run's overrides: `config`, then [fixed]
    points: list[dict[str, Any]]  # the grid's points: trial n runs point n, round robin
    space: dict[str, BaseDistribution]  # every searched key, the grid's too
    repeats: list[dict[str, Any]]  # a trial's runs (their seed and fold); it scores their mean
    metric: str
    maximize: bool


def load_sweep(path: Path) -> Sweep:
    try:
        return parse(path, read_toml(path, "sweep file"))
    except (SweepError, ConfigError) as err:  # a sweep command's errors are SweepErrors (exit 2)
        raise SweepError(f"{path}: {err}") from None


def parse(path: Path, data: dict[str, Any]) -> Sweep:
    for key, value in data.items():
        if key not in TOP:
            raise SweepError(f"unknown key {key!r}{did_you_mean(key, TOP, ' (see configs/sweep.toml)')}")
        right_type = isinstance(value, TOP[key]) and not isinstance(value, bool)
        if not right_type or value not in CHOICES.get(key, [value]):
            wanted = " or ".join(map(repr, CHOICES[key])) if key in CHOICES else f"a {TOP[key].__name__}"
            raise SweepError(f"{key} must be {wanted}, got {value!r}")
    old = dict(data.get("random", {}))  # before [space]: `samples` draws per grid point, from `seed`
    samples, seed = old.pop("samples", 1), data.get("seed", old.pop("seed", 0))
    tables = {name: dict(flatten(data.get(name, {}))) for name in ("fixed", "grid")}
    # In [space], a table of values is a distribution; a table of tables, a config section
    tables["space"] = dict(flatten(data.get("space", old), leaf=lambda t: not any(map(is_table, t.values()))))
    where: dict[str, str] = {}
    for name, table in tables.items():
        for key in table:
            if key in RESERVED or key in where:
                why = "the sweep sets it" if key in RESERVED else f"also in {where[key]}"
                raise SweepError(f"{name}.{key}: {why}")
            where[key] = name
    folds, seeds = data.get("folds", 0), data.get("seeds", [None])  # None: the config's own seed
    fixed = {**({"config": data["config"]} if "config" in data else {}), **tables["fixed"]}
    fixed |= {"data.folds": folds} if folds else {}
    # At least one seed, every one an int (not a bool), none twice
    if "seeds" in data and ({type(s) for s in seeds} != {int} or len(set(seeds)) < len(seeds)):
        raise SweepError(f"seeds must list different ints, like [1, 2, 3], got {seeds!r}")
    if type(samples) is not int or min(samples, data.get("trials", 1)) < 1 or data.get("prune_after", 0) < 0:
        raise SweepError("trials and random.samples must be ints >= 1, prune_after an int >= 0")
    grid = {key: distribution(f"grid.{key}", {"choice": values}) for key, values in tables["grid"].items()}
    space = {key: distribution(f"space.{key}", table) for key, table in tables["space"].items()}
    repeats = [{"seed": s} if s is not None else {} for s in seeds]
    repeats = [{**r, "data.fold": f} for r in repeats for f in range(folds)] if folds else repeats
    first = {**fixed, **repeats[0]}  # a trial's first run, each value alone, as training builds it
    monitor = config(first, {}, "fixed").monitor
    for key, dist in {**grid, **space}.items():
        for value in dist.choices if isinstance(dist, CategoricalDistribution) else (dist.low, dist.high):
            config(first, {key: value}, f"{where[key]}.{key}")
    if data.get("sampler") == "grid" and space:
        raise SweepError("sampler = 'grid' runs the [grid] alone: choose 'tpe' or 'random' for [space]")
    points = [dict(zip(grid, p, strict=True)) for p in itertools.product(*(d.choices for d in grid.values()))]
    base = flatten(read_toml(Path(data["config"]), "config file")) if "config" in data else []
    options = {"trials": len(points) * samples if old else 20 if space else len(points), "seed": seed}
    options |= {"sampler": "random" if old else "tpe", "pruner": "median" if space and not old else "none"}
    options |= {"storage": None, "threads": "threads" in where or "threads" in dict(base)}
    options |= {key: data[key] for key in OPTIONS if key in data}
    # The median pruner waits for this many trials to end unpruned: 5 would leave a sweep of 8
    # trials 3 to prune, so a smaller budget waits for a quarter of it
    options.setdefault("prune_after", min(5, max(1, options["trials"] // 4)))
    metric = data.get("metric", f"best_{monitor}")  # the best epoch's, as best.pt keeps it
    # What a run's result.json holds: the monitored metric's best, each metric's last value and
    # the test split's
    known = [f"best_{monitor}", *MONITORS, *(name.replace("val_", "test_", 1) for name in MONITORS)]
    if metric not in known:
        raise SweepError(f"metric must be one of {', '.join(known)}, got {metric!r}")
    maximize = data.get("mode", "max" if MONITORS.get(metric.removeprefix("best_")) else "min") == "max"
    return Sweep(path, options, fixed, points, {**grid, **space}, repeats, metric, maximize)


def distribution(where: str, table: Any) -> BaseDistribution:
    """An Optuna distribution; a list value travels as its JSON text (Optuna's choices are scalars)."""
    kind, args = next(iter(table.items())) if is_table(table) and len(table) == 1 else ("", None)
    if kind not in DISTRIBUTIONS:
        hint = did_you_mean(kind, DISTRIBUTIONS, f" (one of {', '.join(DISTRIBUTIONS)})")
        raise SweepError(
            f"{where} must be one distribution, such as log_uniform = [lo, hi] in a table: {table!r}{hint}"
        )
    values = args if isinstance(args, list) else []
    if kind == "choice" and values and all(isinstance(v, (str, int, float, list)) for v in values):
        return CategoricalDistribution([json.dumps(v) if isinstance(v, list) else v for v in values])
    if kind != "choice" and len(values) == 2 and all(type(v) in (int, float) for v in values):
        with contextlib.suppress(ValueError):  # lo > hi, or lo <= 0 on a log scale: refused below
            # Integer bounds search integers
            number = IntDistribution if all(type(v) is int for v in values) else FloatDistribution
            return number(*values, log=kind == "log_uniform")
    wanted = "a non-empty list of values" if kind == "choice" else "[lo, hi] with lo <= hi (lo > 0 for log)"
    raise SweepError(f"{where}.{kind} must be {wanted}, got {args!r}")


def config(fixed: dict[str, Any], point: dict[str, Any], where: str) -> Any:
    try:
        return load_config(overrides({**fixed, **point}))
    except ConfigError as err:
        raise SweepError(f"{where}: {err}") from None


def is_table(value: Any) -> bool:
    return isinstance(value, dict)


def value_text(value: Any) -> str:  # as the training command line takes it
    return value if isinstance(value, str) else json.dumps(value)


def overrides(values: dict[str, Any]) -> list[str]:
    return [f"{key}={value_text(value)}" for key, value in values.items()]


def run_name(number: int, repeat: dict[str, Any]) -> str:
    """Trial `number`'s run of one seed and fold: trial-007, trial-007-seed2-fold0."""
    tags = "".join(f"-{key.rpartition('.')[2]}{value}" for key, value in repeat.items())
    return f"trial-{number:03d}{tags}"


def result(run_dir: Path, metric: str) -> float:
    return json.loads((run_dir / "result.json").read_text(encoding="utf-8"))[metric]


def say(line: str) -> None:
    print(line, flush=True)
