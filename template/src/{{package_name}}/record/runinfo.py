"""The run directory, and the record of how a run was made: its config, its environment and its
data."""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import checkpoint_dir
from ..config import Config, ConfigError
from ..runtime.files import write_json


def resolve_run_dir(cfg: Config) -> Path:
    """`runs_dir/run_name`; without a name, the newest run when resuming, else a new timestamp."""
    runs = Path(cfg.runs_dir)
    for existing in (runs, *runs.parents):
        if existing.exists():
            if not existing.is_dir():
                raise ConfigError(f"runs_dir={cfg.runs_dir}: {existing} is a file, not a directory")
            break
    if cfg.run_name:
        return runs / cfg.run_name
    if cfg.resume == "auto":
        candidates = [d for d in runs.glob("*") if checkpoint_dir(d).is_dir()]
        if candidates:
            return max(candidates, key=lambda d: checkpoint_dir(d).stat().st_mtime)
    return runs / time.strftime("%Y%m%d-%H%M%S")


def write_run_info(run_dir: Path, cfg: Config, device: torch.device, template_version: str) -> None:
    """Write the resolved config (config.json) and the environment (environment.json), so the run
    can be understood and repeated."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot create the run directory {run_dir}: {err.strerror or err}") from None
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "cuda": torch.version.cuda,
        "git_commit": _git_commit(),
        "template_version": template_version,
        "seed": cfg.seed,
        "deterministic": cfg.deterministic,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        # Who writes the run: `compare` tells a run in progress from a killed one by them
        "host": platform.node(),
        "pid": os.getpid(),
    }
    _write_record(run_dir / "config.json", dataclasses.asdict(cfg))
    _write_record(run_dir / "environment.json", env)


def write_data_report(run_dir: Path, report: dict[str, Any]) -> None:
    """Write what the run trains on (data.json: see data/report.py)."""
    _write_record(run_dir / "data.json", report)


def _write_record(path: Path, record: dict[str, Any]) -> None:
    """Write `record` as JSON whole: a resumed run rewrites its records, and a kill or a full disk
    then leaves the previous ones."""
    try:
        write_json(path, record)
    except OSError as err:
        raise ConfigError(f"cannot write {path}: {err.strerror or err}") from None


def _git_commit() -> str | None:
    """The project's commit, with `+dirty` when there are uncommitted changes; None outside git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")
