"""The sweep file, checked whole before anything runs, and its members (no torch: most sweep
commands train nothing)."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import ConfigError, flatten, load_config, read_toml
from ..runtime.errors import did_you_mean

SWEEP_KEYS = ("config", "metric", "mode", "seeds", "fixed", "grid", "random")
DISTRIBUTIONS = ("choice", "uniform", "log_uniform")
# Config keys the sweep sets for every member itself, and what to write instead
RESERVED = {
    "config": "set the base config with `config = PATH` at the top of the sweep file",
    "seed": "list the seeds with `seeds = [...]` at the top of the sweep file",
    "runs_dir": "the sweep directory is the --dir option",
    "run_name": "members are named after their overrides",
    "resume": "members always resume (resume=auto)",
}


class SweepError(ValueError):
    """A bad sweep file or command line, in one line for the user."""


@dataclass(frozen=True)
class Member:
    index: int  # its place in the sweep's order (the SLURM array task id)
    name: str  # a hash of `overrides`: its folder in the sweep directory
    point: dict[str, Any]  # the searched keys' values (grid and random)
    seed: int | None  # None: the config's own seed
    overrides: dict[str, Any]  # its command line, but for where it runs


@dataclass(frozen=True)
class Sweep:
    file: Path
    metric: str
    maximize: bool
    points: list[dict[str, Any]]
    seeds: list[int | None]
    members: list[Member]
    sets_threads: bool  # the sweep file or its base config chooses the thread count
    device: str | None  # the device every member is pinned to, if the sweep pins one


def load_sweep(path: Path) -> Sweep:
    try:
        data = read_toml(path, "sweep file")
    except ConfigError as err:  # a sweep command's errors are all SweepErrors (exit code 2)
        raise SweepError(str(err)) from None
    try:
        for key in data:
            if key not in SWEEP_KEYS:
                raise SweepError(_unknown("key", key, SWEEP_KEYS))
        base = data.get("config")
        if base is not None and not isinstance(base, str):
            raise SweepError(f"config must be the path of a config file, got {base!r}")
        base_config = dict(flatten(read_toml(Path(base), "config file"))) if base else {}
        metric, maximize, seeds = _ranking(data)
        fixed, searched_keys, points = _points(data)
        members = _members(points, seeds, {"config": base} if base else {}, fixed)
        for member in members:  # each config built as its training builds it: a bad key stops here
            try:
                load_config([as_override(key, value) for key, value in member.overrides.items()])
            except ConfigError as err:
                raise SweepError(f"{err} (member {member.name}: {describe(member)})") from None
    except (SweepError, ConfigError) as err:
        raise SweepError(f"{path}: {err}") from None
    device = None if "device" in searched_keys else fixed.get("device", base_config.get("device"))
    threads = "threads" in fixed or "threads" in searched_keys or "threads" in base_config
    return Sweep(path, metric, maximize, points, seeds, members, threads, device)


def _ranking(data: dict[str, Any]) -> tuple[str, bool, list[int | None]]:
    metric = data.get("metric", "val_loss")
    if not isinstance(metric, str):
        raise SweepError(f"metric must be the name of a metric such as 'val_loss', got {metric!r}")
    mode = data.get("mode", "min")
    if mode not in ("min", "max"):
        raise SweepError(f"mode must be 'min' (lower {metric} is better) or 'max', got {mode!r}")
    seeds = data.get("seeds", [None])  # None: one run per point, with the config's own seed
    ints = isinstance(seeds, list) and all(is_number(s) and isinstance(s, int) for s in seeds)
    if "seeds" in data and not (ints and seeds):
        raise SweepError(f"seeds must be a non-empty list of ints like [1, 2, 3], got {seeds!r}")
    if len(set(seeds)) < len(seeds):
        raise SweepError(f"seeds lists a seed twice: {seeds!r}")
    return metric, mode == "max", seeds


def _points(data: dict[str, Any]) -> tuple[dict[str, Any], set[str], list[dict[str, Any]]]:
    """The [fixed] keys, the searched keys, and the points: the grid crossed with the draws."""
    fixed, grid = dict(flatten(_section(data, "fixed"))), dict(flatten(_section(data, "grid")))
    settings = _section(data, "random")
    samples, random_seed = settings.pop("samples", 0), settings.pop("seed", 0)
    # A table of tables is a config section; one of values is a distribution
    distributions = dict(flatten(settings, leaf=lambda t: not any(isinstance(v, dict) for v in t.values())))
    where: dict[str, str] = {}
    for section, keys in (("fixed", fixed), ("grid", grid), ("random", distributions)):
        for key in keys:
            if key in RESERVED:
                raise SweepError(f"{section}.{key}: the sweep sets {key} itself; {RESERVED[key]}")
            if key in where:
                raise SweepError(f"{key} is set in both {where[key]} and {section}; set it in one")
            where[key] = section
    for key, value in fixed.items():
        _check_value(f"fixed.{key}", value)
    for key, values in grid.items():
        _check_value(f"grid.{key}", values, listed=True)
    if distributions and not (is_number(samples) and isinstance(samples, int) and samples >= 1):
        raise SweepError(f"random.samples must be the number of draws (an int >= 1), got {samples!r}")
    if not (is_number(random_seed) and isinstance(random_seed, int)):
        raise SweepError(f"random.seed must be an int (the seed of the draws), got {random_seed!r}")
    if "random" in data and not distributions:
        raise SweepError("random lists no distribution, such as model.dropout = { uniform = [0, 0.3] }")
    draws = {key: _distribution(f"random.{key}", table) for key, table in distributions.items()}
    rng = random.Random(random_seed)
    # Drawn sample by sample: raising `samples` keeps the samples drawn before
    sampled = [{key: draw(rng) for key, draw in draws.items()} for _ in range(samples)] if draws else [{}]
    crossed = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    return fixed, {*grid, *distributions}, [{**at, **sample} for at in crossed for sample in sampled]


def _members(points: list[dict[str, Any]], seeds: list[Any], base: dict, fixed: dict) -> list[Member]:
    """A member per point and seed, named after a hash of its sorted overrides: adding a grid
    value or reordering the file renames no other member."""
    members: list[Member] = []
    names: dict[str, dict[str, Any]] = {}
    for point in points:
        for seed in seeds:
            overrides = {**base, **fixed, **point, **({"seed": seed} if seed is not None else {})}
            digest = hashlib.sha256(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:8]
            if digest in names:
                raise SweepError(f"two members have the same overrides {names[digest]}; list each value once")
            names[digest] = overrides
            members.append(Member(len(members), digest, point, seed, overrides))
    return members


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise SweepError(f"{name} must be a table ([{name}] and key = value lines), got {table!r}")
    return dict(table)


def _check_value(where: str, value: Any, listed: bool = False) -> None:
    """Only what the training command line takes: numbers, strings, booleans and lists."""
    if listed and (not isinstance(value, list) or not value):
        raise SweepError(f"{where} must be a non-empty list of values, got {value!r}")
    if isinstance(value, list):
        for item in value:
            _check_value(where, item)
    elif not isinstance(value, (str, int, float)):  # bool is an int
        raise SweepError(f"{where}: {value!r} is not a number, string, boolean or list")


def _unknown(what: str, key: str, known: Iterable[str]) -> str:
    hint = did_you_mean(key, known, otherwise=f" (expected one of {', '.join(known)})")
    return f"unknown {what} {key!r}{hint}"


def _distribution(where: str, table: Any) -> Callable[[random.Random], Any]:
    """A distribution as a function of a `random.Random`. Integer bounds draw integers; other
    draws keep 4 significant digits, for readable names, logs and tables."""
    shapes = "{ choice = [a, b, ...] }, { uniform = [lo, hi] } or { log_uniform = [lo, hi] }"
    if not isinstance(table, dict):
        raise SweepError(f"{where} must be a distribution: {shapes}, got {table!r}")
    for key in table:
        if key not in DISTRIBUTIONS:
            raise SweepError(f"{where}: {_unknown('distribution', key, DISTRIBUTIONS)}")
    if len(table) != 1:
        raise SweepError(f"{where} must be one distribution, got {', '.join(table)}")
    ((kind, args),) = table.items()
    if kind == "choice":
        _check_value(f"{where}.choice", args, listed=True)
        return lambda rng: rng.choice(args)
    if not (isinstance(args, list) and len(args) == 2 and all(map(is_number, args)) and args[0] < args[1]):
        raise SweepError(f"{where}.{kind} must be [lo, hi], two numbers with lo < hi, got {args!r}")
    lo, hi = args
    integers = isinstance(lo, int) and isinstance(hi, int)
    if kind == "uniform":
        return lambda rng: rng.randint(lo, hi) if integers else float(f"{rng.uniform(lo, hi):.4g}")
    if lo <= 0:
        raise SweepError(f"{where}.log_uniform needs lo > 0, got {args!r}")
    rounded = round if integers else lambda value: float(f"{value:.4g}")
    return lambda rng: rounded(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def is_number(value: Any) -> bool:  # bool is an int to Python, not to us
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_text(value: Any) -> str:  # as the training command line parses it
    return value if isinstance(value, str) else json.dumps(value)


def as_override(key: str, value: Any) -> str:
    return f"{key}={value_text(value)}"


def searched(member: Member) -> dict[str, Any]:  # what sets it apart from the other members
    return {**member.point, **({"seed": member.seed} if member.seed is not None else {})}


def describe(member: Member) -> str:
    return " ".join(as_override(key, value) for key, value in searched(member).items()) or "(the base config)"
