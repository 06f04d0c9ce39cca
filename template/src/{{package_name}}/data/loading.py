"""What every task's data module returns, and the one DataLoader recipe both loops use."""

from __future__ import annotations

import atexit
import multiprocessing
import signal
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ..config import Config
from ..runtime.distributed import DistEnv
from ..runtime.errors import DataError
from ..runtime.preemption import STOP_SIGNALS
from ..runtime.seeding import seed_worker
from .sampling import ResumableSampler, SeededSamples

# data.batch_size=0: the largest power of two from DEFAULT_BATCH down to MIN_BATCH that gives the
# training set MIN_STEPS_PER_EPOCH optimizer steps an epoch: 108 images at 64 made 1 step an epoch,
# too few to learn from in a bounded number of epochs
DEFAULT_BATCH = 64
MIN_BATCH = 8
MIN_STEPS_PER_EPOCH = 4


@dataclass
class Datasets:
    """Map-style datasets whose item `i` is `(input, target)`: the built-in recipes' or the user's
    (`data.source=MODULE:FUNCTION`). The loaders read them through `SeededSamples`."""

    train: Dataset
    val: Dataset
    info: Any  # what the model must know of the data: data_info.ImageInfo or data_info.TextInfo
    train_weights: np.ndarray | None = None  # relative draw rates (data.balanced); None: each once
    # Held out from training and validation alike: best.pt is scored on it once, as the run ends
    test: Dataset | None = None
    # Data keys as the data resolved them, key: (value, why); data.image_size=0 is chosen from the
    # files. The run records them in config.json, as the batch size, so that a resume keeps them
    chosen: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def split(self, name: str) -> Dataset:
        """The split called `name` ("train", "val" or "test"), or a DataError naming what is there."""
        found = {"train": self.train, "val": self.val, "test": self.test}.get(name)
        if found is None:
            has = "train, val" + (", test" if self.test is not None else "")
            raise DataError(f"the data has no {name} split (it has {has})")
        return found


def first_input(dataset: Any) -> torch.Tensor:
    """The input of `dataset`'s first sample, read as the loaders read it."""
    return torch.as_tensor(SeededSamples(dataset, seed=0)[(0, 0)][0])


def check_test_split(saved_info: dict[str, Any], info: dict[str, Any], source: str) -> None:
    """A DataError when `source` no longer holds out the test samples a run started with (files
    added, removed or renamed since): resumed, the run could train on samples its test split held."""
    saved, now = saved_info.get("test_digest"), info.get("test_digest")
    if saved is not None and now is not None and saved != now:
        raise DataError(
            f"{source}: its test split is not the one this run held out (the data changed since the "
            "run started); train a new run on it, or restore the data as it was"
        )


def choose_batch_size(samples: int, per_step: int) -> tuple[int, str]:
    """data.batch_size=0: (the batch, why) for `samples` training samples when an optimizer step
    takes `per_step` batches (accumulation x processes)."""
    batch = DEFAULT_BATCH
    while batch > MIN_BATCH and samples // (batch * per_step) < MIN_STEPS_PER_EPOCH:
        batch //= 2
    while batch > 1 and samples < batch * per_step:  # at least one step, if the set allows it
        batch //= 2
    if batch == DEFAULT_BATCH:
        return batch, "the default"
    steps = samples // (batch * per_step)
    return batch, (
        f"a small training set: {samples} samples make {steps} optimizer step(s) an epoch at "
        f"{batch}, {samples // (DEFAULT_BATCH * per_step)} at the default {DEFAULT_BATCH}"
    )


def init_worker(worker_id: int) -> None:
    """Seed the worker and ignore stop signals: schedulers signal every process of a job, as a
    terminal's Ctrl-C does, and a worker dead of one would abort the main process before its stop
    checkpoint."""
    seed_worker(worker_id)
    for sig in (*STOP_SIGNALS, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)


def make_loader(
    dataset: Dataset, sampler: ResumableSampler, *, num_workers: int, device: torch.device, seed: int
) -> DataLoader:
    workers = num_workers > 0
    if workers:
        atexit.unregister(stop_workers)  # once, and after multiprocessing's handler: it runs first
        atexit.register(stop_workers)
    return DataLoader(
        SeededSamples(dataset, seed),
        batch_size=sampler.batch_size,
        sampler=sampler,
        num_workers=num_workers,
        pin_memory=device.type == "cuda",  # lets `.to(device, non_blocking=True)` overlap compute
        persistent_workers=workers,
        prefetch_factor=4 if workers else None,
        worker_init_fn=init_worker,
        generator=torch.Generator().manual_seed(seed),
    )


def stop_workers() -> None:
    """At exit, kill the loader workers an error's traceback kept alive: multiprocessing would send
    them SIGTERM, which they ignore, and wait for ever."""
    child_ended = getattr(signal, "SIGCHLD", None)  # not on Windows
    if child_ended is not None:
        signal.signal(child_ended, signal.SIG_DFL)  # torch's handler would report the kills as errors
    for child in multiprocessing.active_children():
        if child.daemon:
            child.kill()


def optimizer_steps_per_epoch(sampler: ResumableSampler, accum_steps: int, source: str) -> int:
    steps = sampler.batches_per_epoch() // accum_steps
    if steps == 0:
        processes = f" x {sampler.world_size} processes" if sampler.world_size > 1 else ""
        raise DataError(
            f"{source}: {sampler.num_samples} training samples cannot fill one optimizer step of "
            f"data.batch_size={sampler.batch_size} x optim.accum_steps={accum_steps}{processes}"
        )
    return steps


def with_batch_size(
    cfg: Config, train_samples: int, world_size: int, saved: dict[str, Any] | None = None
) -> tuple[Config, str]:
    """`cfg` with the batch size to train at, and why: `data.batch_size` when set; else a resumed
    run's, or one chosen from the training set. Recorded, as `epochs` is, in config.json and every
    checkpoint."""
    kept = saved and saved["config"]["data"]["batch_size"]
    # Resumed, a run has its saved settings: its batch size, chosen or set, is in cfg already
    if kept and cfg.data.batch_size in (0, kept):
        return replace(cfg, data=replace(cfg.data, batch_size=kept)), "the run's own, kept from its start"
    if cfg.data.batch_size:
        return cfg, "set by data.batch_size"
    batch, why = choose_batch_size(train_samples, cfg.optim.accum_steps * world_size)
    return replace(cfg, data=replace(cfg.data, batch_size=batch)), why


def with_chosen(cfg: Config, datasets: Datasets, saved: dict[str, Any] | None = None) -> Config:
    """`cfg` with the data keys as `datasets` resolved them (`Datasets.chosen`); a resumed run's
    are its own, kept from its start (engine/resume.py gives it its saved settings), and said so."""
    kept = saved["config"]["data"] if saved else {}
    for key, (value, _) in datasets.chosen.items():
        if kept.get(key) == value:
            datasets.chosen[key] = (value, "the run's own, kept from its start")
    values = {key: value for key, (value, _) in datasets.chosen.items()}
    return replace(cfg, data=replace(cfg.data, **values))


def make_loaders(
    cfg: Config, env: DistEnv, datasets: Datasets, num_workers: int
) -> tuple[ResumableSampler, DataLoader, DataLoader]:
    """This process's batches: training's in an order that is a function of (seed, epoch),
    validation's the same bounded subset (val_batches) at every evaluation."""
    batch = cfg.data.batch_size
    shared = {"batch_size": batch, "seed": cfg.seed, "rank": env.rank, "world_size": env.world_size}
    train_sampler = ResumableSampler(len(datasets.train), **shared, weights=datasets.train_weights)
    limit = cfg.val_batches * batch
    val_sampler = ResumableSampler(len(datasets.val), **shared, shuffle=False, drop_last=False, limit=limit)
    train_loader = make_loader(
        datasets.train, train_sampler, num_workers=num_workers, device=env.device, seed=cfg.seed
    )
    val_loader = make_loader(datasets.val, val_sampler, num_workers=0, device=env.device, seed=cfg.seed)
    return train_sampler, train_loader, val_loader
