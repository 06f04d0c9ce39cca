"""The checkpoint policy of a run: what goes in a checkpoint, when one is written, which are kept.

A checkpoint is one dict with fixed top-level keys:

- the run's identity: `template_version`, `task`, `config`, `data_info`, `world_size`, and the
  `cpu_budget` it picked (a resumed run keeps it);
- `model` and `optimizer`, whole (gathered from every rank when sharded), under the parameter
  names of the plain model, so a checkpoint loads into a model built from its config alone;
- the `state_dict()` of every other tracked object (`scheduler`, `train_state`, ...);
- `rng`: every RNG stream, one entry per rank.

Collecting the state is a collective, so every rank calls `save`; only rank 0 writes.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from . import TASK, TEMPLATE_VERSION
from .checkpoint import (
    CheckpointError,
    check_compatible,
    checkpoint_dir,
    latest_checkpoint,
    load_checkpoint,
    remove_partial_saves,
    save_step,
    update_best,
)
from .config import Config
from .device import CpuBudget
from .distributed import (
    DistEnv,
    gather_objects,
    load_optimizer_state_dict,
    model_state_dict,
    optimizer_state_dict,
)
from .seeding import capture_rng_state

log = logging.getLogger(__name__)


# What a checkpoint needs to continue a run (besides what the project tracks, see `track`)
RESUME_KEYS = ("task", "config", "model", "optimizer", "train_state", "rng")


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def find_resume(cfg: Config, run_dir: Path) -> dict[str, Any] | None:
    """The checkpoint `resume` asks for: none, the newest loadable one of the run, or a path."""
    if cfg.resume == "none":
        return None
    if cfg.resume == "auto":
        found = latest_checkpoint(run_dir)
        if found is None:
            log.info("resume=auto: no checkpoint in %s yet, starting from scratch", run_dir)
            return None
        path, saved = found
    else:
        path = Path(cfg.resume)
        saved = load_checkpoint(path, needs=RESUME_KEYS)
    log.info("resuming from %s", path)
    return saved


class Checkpointer:
    def __init__(
        self, run_dir: Path, cfg: Config, env: DistEnv, data_info: dict[str, Any], cpu_budget: CpuBudget
    ) -> None:
        self.run_dir = run_dir
        self.cfg = cfg
        self.env = env
        self.identity = {
            "template_version": TEMPLATE_VERSION,
            "task": TASK,
            "config": dataclasses.asdict(cfg),
            "data_info": data_info,
            "world_size": env.world_size,
            "cpu_budget": cpu_budget._asdict(),
        }
        self.model: nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.tracked: dict[str, Stateful] = {}
        if env.is_main:
            for path in remove_partial_saves(checkpoint_dir(run_dir)):
                log.info("removed %s, left by a save that was killed", path.name)

    def load_model(self, model: nn.Module, saved: dict[str, Any]) -> None:
        """Load the saved weights into the plain model, before anything wraps it."""
        check_compatible(saved, model.state_dict(), TASK)
        model.load_state_dict(saved["model"])

    def track(self, model: nn.Module, optimizer: torch.optim.Optimizer, **others: Stateful) -> None:
        """What every checkpoint carries besides the run's identity and the RNG streams."""
        self.model, self.optimizer, self.tracked = model, optimizer, others

    def restore(self, saved: dict[str, Any]) -> None:
        """Load everything tracked but the model (see `load_model`) and the RNG (`rng_state`)."""
        assert self.model is not None and self.optimizer is not None, "track() first"
        missing = [name for name in self.tracked if name not in saved]
        if missing:
            raise CheckpointError(
                f"checkpoint has no {', '.join(missing)}: it was saved by another version of the project"
            )
        load_optimizer_state_dict(self.model, self.optimizer, saved["optimizer"])
        for name, obj in self.tracked.items():
            obj.load_state_dict(saved[name])

    def rng_state(self, saved: dict[str, Any]) -> dict[str, Any]:
        """This rank's saved RNG streams (rank 0's, for a rank the saving run did not have)."""
        streams = saved["rng"]
        return streams[self.env.rank] if self.env.rank < len(streams) else streams[0]

    def due(self, step: int) -> bool:
        """Whether the step interval asks for a checkpoint after `step` (epoch ends always save)."""
        return bool(self.cfg.ckpt_interval) and step % self.cfg.ckpt_interval == 0

    def save(self, step: int, best: bool = False) -> None:
        """Write the checkpoint of `step` (and make it `best.pt`); every rank must call this."""
        assert self.model is not None and self.optimizer is not None, "track() first"
        state = {
            **self.identity,
            "model": model_state_dict(self.model),
            "optimizer": optimizer_state_dict(self.model, self.optimizer),
            **{name: obj.state_dict() for name, obj in self.tracked.items()},
            "rng": gather_objects(capture_rng_state()),
        }
        if self.env.is_main:
            path = save_step(self.run_dir, state, step=step, keep_last=self.cfg.keep_last)
            if best:
                update_best(self.run_dir, path)
