"""The checkpoint policy of a run: what goes in a checkpoint, when one is written, which are kept.

A checkpoint is one dict with fixed top-level keys:

- the run's identity: `template_version`, `task`, `config`, `data_info`, `world_size`, and the
  `cpu_budget` it picked (a resumed run keeps it);
- `model` and `optimizer`, under the parameter names of the plain model, so a checkpoint loads
  into a model built from its config alone: whole in one file, or each rank's shards in a folder
  (`storage.py` says which this project writes);
- the `state_dict()` of every other tracked object (`scheduler`, `train_state`, ...);
- `rng`: every RNG stream, one entry per rank.

Collecting the state is a collective, so every rank calls `save`. A run may resume on another
number of processes: its data position is then mapped onto the new global batch.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from .. import TASK, TEMPLATE_VERSION
from ..config import Config
from ..runtime.device import CpuBudget
from ..runtime.distributed import DistEnv, gather_objects
from ..runtime.seeding import capture_rng_state
from .format import (
    CheckpointError,
    checkpoint_dir,
    latest_checkpoint,
    load_checkpoint,
    remove_partial_saves,
)
from .storage import Storage

log = logging.getLogger(__name__)


# What a checkpoint needs to continue a run (besides what the project tracks, see `track`)
RESUME_KEYS = ("task", "config", "model", "optimizer", "train_state", "rng")


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class SavedFields:
    """`Stateful` for a dataclass: its state is its fields, as plain values."""

    def state_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)


def find_resume(cfg: Config, run_dir: Path) -> dict[str, Any] | None:
    """The checkpoint `resume` asks for: none, the newest loadable one of the run, or a path."""
    if cfg.resume == "none":
        return None
    if cfg.resume == "auto":
        found = latest_checkpoint(run_dir, weights=False)
        if found is None:
            log.info("resume=auto: no checkpoint in %s yet, starting from scratch", run_dir)
            return None
        path, saved = found
    else:
        path = Path(cfg.resume)
        saved = load_checkpoint(path, needs=RESUME_KEYS, weights=False)
    log.info("resuming from %s", path)
    return {**saved, "loaded_from": str(path)}  # where a sharded checkpoint's tensors are


def map_data_position(step_in_epoch: int, saved_per_step: int, per_step: int) -> tuple[int, int]:
    """The optimizer step within the epoch to resume from when a step now takes `per_step`
    samples instead of `saved_per_step` (another world size, batch size or accumulation), and how
    many samples of the epoch are trained on again.

    The epoch's order does not depend on the world size (see `data/sampling.py`), so the samples done
    are its first `step_in_epoch * saved_per_step`. The resumed run starts at the last whole
    global batch among them: no sample is skipped, and fewer than `per_step` are seen twice.
    """
    done = step_in_epoch * saved_per_step
    return done // per_step, done % per_step


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
        self.storage = Storage(run_dir, cfg, env)

    def load_model(self, model: nn.Module, saved: dict[str, Any]) -> None:
        """Load the saved weights into the plain model, before anything wraps it (a sharded
        checkpoint only checks them here, and loads its shards in `restore`)."""
        self.storage.load_weights(model, saved)

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
        self.storage.load_training(self.model, self.optimizer, saved)
        for name, obj in self.tracked.items():
            obj.load_state_dict(saved[name])
        self._map_data_position(saved)

    def _map_data_position(self, saved: dict[str, Any]) -> None:
        position = self.tracked.get("train_state")
        config = saved["config"]
        saved_per_step = config["data"]["batch_size"] * config["optim"]["accum_steps"] * saved["world_size"]
        per_step = self.cfg.data.batch_size * self.cfg.optim.accum_steps * self.env.world_size
        if position is None or (saved_per_step == per_step and saved["world_size"] == self.env.world_size):
            return
        step_in_epoch, repeated = map_data_position(position.step_in_epoch, saved_per_step, per_step)
        log.info(
            "saved on %d processes at %d samples a step, resumed on %d at %d: step %d of the epoch "
            "becomes step %d, %d samples are trained on again",
            saved["world_size"],
            saved_per_step,
            self.env.world_size,
            per_step,
            position.step_in_epoch,
            step_in_epoch,
            repeated,
        )
        position.step_in_epoch = step_in_epoch

    def rng_state(self, saved: dict[str, Any]) -> dict[str, Any]:
        """This rank's saved RNG streams (rank 0's, for a rank the saving run did not have)."""
        streams = saved["rng"]
        return streams[self.env.rank] if self.env.rank < len(streams) else streams[0]

    def due(self, step: int) -> bool:
        """Whether the step interval asks for a checkpoint after `step` (epoch ends always save)."""
        return bool(self.cfg.ckpt_interval) and step % self.cfg.ckpt_interval == 0

    def save(self, step: int, best: bool = False) -> None:
        """Write the checkpoint of `step` (and make it the best); every rank must call this."""
        assert self.model is not None and self.optimizer is not None, "track() first"
        state = {
            **self.identity,
            **{name: obj.state_dict() for name, obj in self.tracked.items()},
            "rng": gather_objects(capture_rng_state()),
        }
        self.storage.save(state, self.model, self.optimizer, step=step, best=best)
