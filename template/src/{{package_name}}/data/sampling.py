"""A sampler whose order is a pure function of (seed, epoch), so a run can resume mid-epoch.

Each yielded key is `(epoch, index)`: datasets derive per-sample augmentation randomness from
(seed, epoch, index) instead of from worker RNG streams. Resuming therefore needs no replay of
skipped batches, and gives the same bits whatever `num_workers` or `persistent_workers` is.

A large dataset (a prepared corpus has a window per block_size tokens: 14 million in 1 GB of
text) is not shuffled by a materialised permutation, which would cost 8 bytes a sample and a
second of start-up per epoch, but by a keyed bijection of the positions (a Feistel network),
evaluated a chunk at a time as the epoch goes: no memory, and still a function of (seed, epoch).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from torch.utils.data import Sampler

SampleKey = tuple[int, int]

LAZY_ABOVE = 1 << 20  # datasets with more samples are shuffled by `shuffled_positions`
CHUNK = 1 << 16  # positions computed at a time by the lazy order
ROUNDS = 4  # of the Feistel network


def _mix(x: np.ndarray, key: np.uint64) -> np.ndarray:
    """A 64-bit hash of `x` under `key` (splitmix64's finaliser): the Feistel round function."""
    z = (x + key) * np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def shuffled_positions(positions: np.ndarray, n: int, seed: int, epoch: int) -> np.ndarray:
    """Where each of `positions` (in 0 .. n-1) goes under a pseudo-random permutation of
    0 .. n-1 chosen by (seed, epoch): a Feistel network over the smallest power of 4 >= n, with
    values that fall outside 0 .. n-1 walked through it again until they land inside."""
    half = max(1, (max(n - 1, 1).bit_length() + 1) // 2)
    mask, shift = np.uint64((1 << half) - 1), np.uint64(half)
    keys = np.random.default_rng([seed, epoch, ROUNDS]).integers(0, 1 << 63, ROUNDS, dtype=np.uint64)
    out = positions.astype(np.uint64)
    todo = np.arange(len(out))
    with np.errstate(over="ignore"):
        while len(todo):
            x = out[todo]
            left, right = x >> shift, x & mask
            for key in keys:
                left, right = right, left ^ (_mix(right, key) & mask)
            out[todo] = (left << shift) | right
            todo = todo[out[todo] >= n]  # cycle walking: apply again until inside
    return out.astype(np.int64)


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
        per_rank = self._rank_count()
        if self.drop_last:
            return per_rank // self.batch_size
        return -(-per_rank // self.batch_size)

    @property
    def lazy(self) -> bool:
        """Shuffled by `shuffled_positions` instead of a materialised permutation."""
        return self.shuffle and self.num_samples > LAZY_ABOVE

    def _epoch_length(self) -> int:
        """Positions in the epoch's order, all ranks together (cut to whole global batches)."""
        if self.drop_last:
            global_batch = self.batch_size * self.world_size
            return self.num_samples // global_batch * global_batch
        return self.num_samples

    def _rank_count(self) -> int:
        """Positions rank, rank + w, rank + 2w, ... below the epoch's length."""
        return max(0, -(-(self._epoch_length() - self.rank) // self.world_size))

    def _remaining(self) -> int:
        """Samples this rank yields from `start_batch` on."""
        left = max(0, self._rank_count() - self.start_batch * self.batch_size)
        return left // self.batch_size * self.batch_size if self.drop_last else left

    def _lazy_keys(self) -> Iterator[SampleKey]:
        """This rank's keys from `start_batch` on, computed a chunk at a time (the settings are
        read now: a later `set_epoch` does not change an iterator already made)."""
        n, seed, epoch, rank, world = self.num_samples, self.seed, self.epoch, self.rank, self.world_size
        first = self.start_batch * self.batch_size  # of this rank's positions
        end = first + self._remaining()

        def keys() -> Iterator[SampleKey]:
            for start in range(first, end, CHUNK):
                positions = rank + world * np.arange(start, min(start + CHUNK, end), dtype=np.int64)
                yield from ((epoch, i) for i in shuffled_positions(positions, n, seed, epoch).tolist())

        return keys()

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
        if self.lazy:
            return self._lazy_keys()
        indices = self._rank_indices()[self.start_batch * self.batch_size :]
        if self.drop_last:
            indices = indices[: len(indices) // self.batch_size * self.batch_size]
        return ((self.epoch, int(i)) for i in indices)

    def __len__(self) -> int:
        return self._remaining()
