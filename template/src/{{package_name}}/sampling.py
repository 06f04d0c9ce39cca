"""A sampler whose order is a pure function of (seed, epoch), so a run can resume mid-epoch.

Each yielded key is `(epoch, index)`: datasets derive per-sample augmentation randomness from
(seed, epoch, index) instead of from worker RNG streams. Resuming therefore needs no replay of
skipped batches, and gives the same bits whatever `num_workers` or `persistent_workers` is.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from torch.utils.data import Sampler

SampleKey = tuple[int, int]


class ResumableSampler(Sampler[SampleKey]):
    """Shuffle per epoch, shard across ranks, and start at any batch of the epoch.

    Rank `r` of `w` takes positions r, r + w, r + 2w, ... of the epoch's order, so global batch
    `i` (the union over ranks) is the same set of samples whatever the number of processes.
    With `drop_last`, the order is cut to whole global batches so that every rank runs the
    same number of steps; without it (validation), every sample is visited exactly once.
    """

    def __init__(
        self,
        num_samples: int,
        *,
        batch_size: int,
        seed: int,
        shuffle: bool = True,
        drop_last: bool = True,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.num_samples = num_samples
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0
        self.start_batch = 0

    def set_epoch(self, epoch: int, start_batch: int = 0) -> None:
        """Select the epoch's order and skip its first `start_batch` batches (for resume)."""
        self.epoch = epoch
        self.start_batch = start_batch

    def batches_per_epoch(self) -> int:
        per_rank = len(self._rank_indices())
        if self.drop_last:
            return per_rank // self.batch_size
        return -(-per_rank // self.batch_size)

    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "epoch": self.epoch, "start_batch": self.start_batch}

    def _rank_indices(self) -> np.ndarray:
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(self.num_samples)
        else:
            order = np.arange(self.num_samples)
        if self.drop_last:
            global_batch = self.batch_size * self.world_size
            order = order[: len(order) // global_batch * global_batch]
        return order[self.rank :: self.world_size]

    def __iter__(self) -> Iterator[SampleKey]:
        indices = self._rank_indices()[self.start_batch * self.batch_size :]
        if self.drop_last:
            indices = indices[: len(indices) // self.batch_size * self.batch_size]
        return ((self.epoch, int(i)) for i in indices)

    def __len__(self) -> int:
        indices = self._rank_indices()[self.start_batch * self.batch_size :]
        if self.drop_last:
            return len(indices) // self.batch_size * self.batch_size
        return len(indices)
