"""What every task's data module returns, and the one DataLoader recipe both loops use."""

from __future__ import annotations

import atexit
import signal
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ..runtime.preemption import STOP_SIGNALS
from ..runtime.seeding import seed_worker
from .sampling import ResumableSampler


class DataError(ValueError):
    """A data source that cannot be used, worded as one line naming the file."""


@dataclass
class Datasets:
    train: Dataset
    val: Dataset
    # What the model must know about the data: an ImageInfo (classification) or a dict (shapes,
    # vocabulary) of the language model
    info: Any
    # How often each training sample is drawn relative to the others (data.balanced); None:
    # each once an epoch
    train_weights: np.ndarray | None = None


def init_worker(worker_id: int) -> None:
    """Seed the worker, and leave stop signals to the main process.

    Schedulers signal every process of a job. A worker that died of SIGTERM would abort the
    main process mid-step, before it could write its stop checkpoint; the main process shuts
    the workers down itself when it exits.
    """
    seed_worker(worker_id)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def make_loader(
    dataset: Dataset,
    sampler: ResumableSampler,
    *,
    num_workers: int,
    device: torch.device,
    seed: int,
) -> DataLoader:
    """Batches from `sampler`, loaded ahead by workers and pinned when they go to a GPU."""
    workers = num_workers > 0
    loader = DataLoader(
        dataset,
        batch_size=sampler.batch_size,
        sampler=sampler,
        num_workers=num_workers,
        # Pinned host memory lets `.to(device, non_blocking=True)` overlap the copy with compute
        pin_memory=device.type == "cuda",
        # Keeping workers alive across epochs saves their start-up; the sampler, not the
        # workers' RNG, decides order and augmentation, so this does not change the bits
        persistent_workers=workers,
        prefetch_factor=4 if workers else None,
        worker_init_fn=init_worker,
        generator=torch.Generator().manual_seed(seed),
    )
    if workers:
        atexit.register(_stop_workers, weakref.ref(loader))
    return loader


def _stop_workers(loader_ref: weakref.ref) -> None:
    """At exit, stop the persistent workers of a loader that was never cleaned up.

    An exception raised mid-epoch (a bad file in a worker, a failed step) keeps the loader's
    iterator alive in its traceback until the interpreter exits. multiprocessing then stops
    its worker processes with SIGTERM, which `init_worker` ignores, and waits for them for ever.
    Asked to stop through their queues first, they exit at once.
    """
    loader = loader_ref()
    iterator = getattr(loader, "_iterator", None)  # DataLoader keeps a persistent workers' iterator
    if iterator is not None and hasattr(iterator, "_shutdown_workers"):
        iterator._shutdown_workers()


def optimizer_steps_per_epoch(sampler: ResumableSampler, accum_steps: int, source: str) -> int:
    """Optimizer steps in one epoch of `sampler` (each takes `accum_steps` batches per process)."""
    steps = sampler.batches_per_epoch() // accum_steps
    if steps == 0:
        processes = f" x {sampler.world_size} processes" if sampler.world_size > 1 else ""
        raise DataError(
            f"{source}: {sampler.num_samples} training samples cannot fill one optimizer step of "
            f"data.batch_size={sampler.batch_size} x optim.accum_steps={accum_steps}{processes}"
        )
    return steps
