"""Checkpoints of the whole training state: written atomically, loaded without unpickling code.

A checkpoint is one dict with fixed top-level keys (`checkpointer.py` says which). Checkpoints live
in `<run_dir>/checkpoints/`: `step_000120.pt` for the last `keep_last` steps, and `best.pt` for
the lowest validation loss so far. A sharded (FSDP) checkpoint is a folder instead, `step_000120/`
and `best/` (`storage.py` of such a project writes them): the model's, the optimizer's and the
EMA's tensors in torch.distributed.checkpoint (DCP) files, the rest of the dict in `state.pt`.
Both kinds, and a folder written by `export`, load here, so evaluation and sampling take any of
them.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import pickle
import re
import shutil
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ..runtime.errors import first_line
from ..runtime.files import copy_whole, remove_entry, replace_folder, writing
from .errors import CheckpointError
from .exported import is_export, read_exported

log = logging.getLogger(__name__)

_STEP_FILE = re.compile(r"step_(\d+)(\.pt)?")
# What a save writes before its rename (a file, or a sharded checkpoint's folder); left behind
# only by a process killed mid-save
_PARTIAL_GLOB = ".*.tmp"
# In a sharded checkpoint's folder, beside DCP's files (see shards.py): the rest of the checkpoint
SHARDED_STATE = "state.pt"


def checkpoint_dir(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    """Write `state` so that `path` holds either the old file or the new one, never a torn one
    (see `files.writing`)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with writing(path) as f:
            torch.save(dict(state), f)
    except (OSError, RuntimeError) as err:
        # torch's zip writer reports a full disk as a RuntimeError, so ask the disk itself
        raise CheckpointError(f"cannot write checkpoint {path}: {_reason(err, path.parent)}") from None


def _reason(err: BaseException, directory: Path | None = None) -> str:
    full = isinstance(err, OSError) and err.errno == errno.ENOSPC
    if not full and directory is not None:
        with contextlib.suppress(OSError):
            full = shutil.disk_usage(directory).free < 1 << 20
    if full:
        return "no space left on the device (earlier checkpoints are kept)"
    return err.strerror if isinstance(err, OSError) and err.strerror else first_line(err)


def remove_partial_saves(directory: Path) -> list[Path]:
    """Delete the temporary files and folders of saves that were killed before their rename."""
    removed = sorted(directory.glob(_PARTIAL_GLOB))
    for path in removed:
        remove_entry(path)
    return removed


def load_checkpoint(path: Path, needs: tuple[str, ...] = (), weights: bool = True) -> dict[str, Any]:
    """Load on the CPU with `weights_only=True` (tensors and plain containers, never code); a
    checkpoint lacking any top-level key in `needs` is refused.

    `path` may also be a sharded checkpoint's folder (its model is consolidated into whole
    tensors, or with `weights=False` only described, shapes and dtypes on the meta device, for a
    resume that loads its own shards) or a folder written by `export`.
    """
    state = _load_folder(path, weights) if path.is_dir() else _load_file(path)
    missing = [key for key in needs if key not in state]
    if missing:
        raise CheckpointError(f"{path}: not a training checkpoint of this project (no {', '.join(missing)})")
    return state


def _load_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint")
    if not zipfile.is_zipfile(path):  # what torch.save writes
        raise CheckpointError(f"{path}: not a checkpoint (not a file written by torch.save)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except pickle.UnpicklingError as err:
        if "Weights only load failed" in str(err):
            raise CheckpointError(
                f"{path}: refused, the file holds pickled code or objects, not only tensors "
                "(only load checkpoints you trust, and never with weights_only=False)"
            ) from None
        raise CheckpointError(f"{path}: unreadable checkpoint ({first_line(err)})") from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile) as err:
        raise CheckpointError(f"{path}: truncated or corrupt checkpoint ({first_line(err)})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a training checkpoint (it holds a {type(state).__name__})")
    return state


def _load_folder(path: Path, weights: bool) -> dict[str, Any]:
    if is_export(path):
        return read_exported(path)
    from .shards import SHARDED_INDEX, read_model  # torch.distributed.checkpoint is needed only here

    if not (path / SHARDED_STATE).is_file() or not (path / SHARDED_INDEX).is_file():
        raise CheckpointError(
            f"{path}: not a checkpoint (a folder without {SHARDED_INDEX} and {SHARDED_STATE})"
        )
    state = _load_file(path / SHARDED_STATE)
    state["model"] = read_model(path, consolidate=weights)
    averages = read_model(path, consolidate=weights, part="ema")
    if averages:  # the EMA's, when the run kept one: sharded beside the model's
        state["ema"] = {**state["ema"], "model": averages}
    return state


def save_step(run_dir: Path, state: Mapping[str, Any], *, step: int, keep_last: int) -> Path:
    """Write the step checkpoint, then drop all but the newest `keep_last` of them."""
    directory = checkpoint_dir(run_dir)
    path = directory / f"step_{step:06d}.pt"
    save_checkpoint(path, state)
    prune(directory, keep_last)
    return path


def prune(directory: Path, keep_last: int) -> None:
    """Drop all but the newest `keep_last` step checkpoints."""
    for old in step_checkpoints(directory)[:-keep_last]:
        remove_entry(old)


def update_best(run_dir: Path, latest: Path) -> None:
    """Make `best.pt` (`best/` for a folder) a copy of `latest` (the caller decided it is the best
    so far)."""
    if not latest.is_dir():
        copy_whole(latest, checkpoint_dir(run_dir) / "best.pt")
        return
    # Hard links where the file system has them: the copy then costs no space and no time
    staging = latest.with_name(".best.tmp")
    remove_entry(staging)
    shutil.copytree(latest, staging, copy_function=_link_or_copy)
    replace_folder(staging, checkpoint_dir(run_dir) / "best")


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def step_checkpoints(directory: Path) -> list[Path]:
    """Step checkpoints (files, or sharded checkpoints' folders), oldest first."""
    found = [(int(m.group(1)), p) for p in directory.glob("step_*") if (m := _STEP_FILE.fullmatch(p.name))]
    return [path for _, path in sorted(found)]


def latest_checkpoint(run_dir: Path, weights: bool = True) -> tuple[Path, dict[str, Any]] | None:
    """The newest step checkpoint that loads; corrupt or truncated ones are skipped with a warning."""
    for path in reversed(step_checkpoints(checkpoint_dir(run_dir))):
        try:
            return path, load_checkpoint(path, weights=weights)
        except CheckpointError as err:
            log.warning("skipping %s", err)
    return None


def check_task(state: Mapping[str, Any], task: str) -> None:
    """Refuse a checkpoint of another task (its config and data would not fit this project)."""
    if state.get("task") != task:
        raise CheckpointError(f"checkpoint is for task {state.get('task')!r}, this project trains {task!r}")


def check_compatible(state: Mapping[str, Any], model_state: Mapping[str, torch.Tensor], task: str) -> None:
    """Refuse, naming the reason, a checkpoint of another task or of another model shape."""
    check_task(state, task)
    saved = state["model"]
    missing = sorted(model_state.keys() - saved.keys())
    unexpected = sorted(saved.keys() - model_state.keys())
    reshaped = [
        f"{key} {tuple(saved[key].shape)} vs {tuple(model_state[key].shape)}"
        for key in sorted(model_state.keys() & saved.keys())
        if saved[key].shape != model_state[key].shape
    ]
    problems = []
    if missing:
        problems.append(f"missing {_few(missing)}")
    if unexpected:
        problems.append(f"unexpected {_few(unexpected)}")
    if reshaped:
        problems.append(f"shape (checkpoint vs config) {_few(reshaped)}")
    if problems:
        raise CheckpointError("checkpoint does not fit the configured model: " + "; ".join(problems))


def _few(items: list[str], limit: int = 3) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
