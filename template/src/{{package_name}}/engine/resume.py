"""Which run `resume` continues, and with which settings: the run's own, as saved in its folder,
with the command line's changes on top where they keep it the same run.

    train run_name=R resume=auto             R, with the settings it was started with
    train run_name=R resume=auto epochs=8    R, trained longer
    train resume=auto                        the newest unfinished run the command fits
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import TASK
from ..config import RESUMES, Config, ConfigError, changes, config_from_dict, load_config
from .checkpoint import best_checkpoint, check_task, checkpoint_dir, load_checkpoint

# How long a run trains: a finished run resumed without a change to one of these is done
LENGTH = {"epochs", "max_steps", "min_steps", "patience"}
# What a resumed run may change and stay the same run: how long it trains, how often it logs and
# checkpoints, and where it runs. Anything else (model, data, batch size, optimizer) would make
# another run under this run's name, its curves and checkpoints a mix of two
SAME_RUN = {
    *LENGTH,
    *("log_interval", "profile", "tracker", "peak_tflops"),  # logging
    *("ckpt_interval", "keep_last", "ckpt_async"),  # checkpointing
    *("data.num_workers", "device", "threads"),  # where it runs
}


class FinishedRun(Exception):
    """The run to resume had finished, and the command asks it for no more training."""


@dataclass
class Resumed:
    config: Config  # the run's saved settings with the command line's changes
    changes: dict[str, tuple[Any, Any]]  # key: (saved value, new value)


def resolve(args: list[str]) -> Resumed:
    """The config a `train` command line runs with: as given, or, with `resume`, the run's own
    with the line's changes applied. Raises ConfigError for a change that would make it another
    run, and FinishedRun for a finished run that the line does not train longer."""
    cfg = load_config(args)
    if cfg.resume == "none":
        return Resumed(cfg, {})
    if cfg.resume != "auto":  # a checkpoint's path: its own config, in a run folder of this line's
        checkpoint = Path(cfg.resume)
        state = load_checkpoint(checkpoint, needs=("config",))
        check_task(state, TASK)  # first: the config of another task's checkpoint does not parse
        return said(_apply(args, state["config"], checkpoint))
    runs = Path(cfg.runs_dir)
    if cfg.run_name:
        run_dir = runs / cfg.run_name
        if not (run_dir / "config.json").is_file():
            return Resumed(cfg, {})  # nothing to resume yet: training says so and starts it
        resumed = _apply(args, read_config(run_dir), best_checkpoint(run_dir))
        if (run_dir / "result.json").is_file() and not LENGTH & resumed.changes.keys():
            raise FinishedRun(finished(run_dir, resumed.config))
        return said(resumed)
    # The runs with a checkpoint and no result, newest checkpoint first
    found = [d for d in runs.glob("*") if checkpoint_dir(d).is_dir() and not (d / "result.json").is_file()]
    for run_dir in sorted(found, key=lambda d: checkpoint_dir(d).stat().st_mtime, reverse=True):
        try:
            resumed = _apply(args, read_config(run_dir), best_checkpoint(run_dir))
        except ConfigError:
            continue  # the command contradicts this run: not the one it continues
        say(f"resume=auto: continuing the newest unfinished run that fits, {run_dir.name} ({run_dir})")
        return said(Resumed(dataclasses.replace(resumed.config, run_name=run_dir.name), resumed.changes))
    say(f"resume=auto: no unfinished run in {runs} fits this command; starting a new run")
    return Resumed(dataclasses.replace(cfg, resume="none"), {})


def _apply(args: list[str], saved: dict[str, Any], weights: Path) -> Resumed:
    """The saved config with the command line on top; `weights` is what a new run would start
    from, for the refusal of a change that makes another run."""
    cfg = load_config(args, base=config_from_dict(saved))
    changed = changes(saved, cfg)
    allowed = [key for key in changed if key in SAME_RUN or same_global_batch(key, cfg, saved, weights)]
    refused = [key for key in changed if key not in allowed]
    if refused:
        said = ", ".join(f"{key}={changed[key][1]!r} (it was {changed[key][0]!r})" for key in refused)
        raise ConfigError(
            f"resume: {said} would make another run; a resumed run may change only its length, "
            f"logging, checkpointing, workers and device. To start a new run from its weights: "
            f"run_name=NEW init_weights={weights} and the new settings"
        )
    return Resumed(cfg, changed)


def same_global_batch(key: str, cfg: Config, saved: dict[str, Any], weights: Path) -> bool:
    """Whether a changed `key` only keeps the global batch on another number of processes: a run
    saved on 2 processes at data.batch_size=8 goes on on 1 at 16 (checkpoint.map_data_position)."""
    if key not in ("data.batch_size", "optim.accum_steps"):
        return False
    try:  # the run folder's, two levels above its checkpoint
        environment = json.loads((weights.parents[1] / "environment.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, IndexError):
        return False
    before = saved["data"]["batch_size"] * saved["optim"]["accum_steps"] * environment.get("world_size", 1)
    now = cfg.data.batch_size * cfg.optim.accum_steps * int(os.environ.get("WORLD_SIZE", "1"))
    return before == now


def finished(run_dir: Path, cfg: Config) -> str:
    """One line on a finished run: where it ended, its best score, how to train it longer."""
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    monitor = result.get("monitor", cfg.monitor)
    best = result.get(f"best_{monitor}")
    scored = "no evaluation" if best is None else f"best {monitor} {best:.4f} at epoch {result['best_epoch']}"
    return (
        f"{run_dir} finished at epoch {result.get('epoch', cfg.epochs)} (step {result['step']}), "
        f"{scored}; to train longer: run_name={run_dir.name} resume=auto epochs={2 * cfg.epochs}"
    )


def read_config(run_dir: Path) -> dict[str, Any]:
    """The settings a run was started (or last resumed) with, from its config.json."""
    try:
        saved = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read {run_dir / 'config.json'}: {err}") from None
    return {key: value for key, value in saved.items() if key != RESUMES}


def said(resumed: Resumed) -> Resumed:
    """`resumed`, once its changes are told in one line."""
    if resumed.changes:
        changed = ", ".join(f"{key} {old!r} -> {new!r}" for key, (old, new) in resumed.changes.items())
        say(f"resume: {changed}")
    return resumed


def say(line: str) -> None:
    """Print on the first process only: under torchrun every rank resolves the same command."""
    if os.environ.get("RANK", "0") == "0":
        print(line)
