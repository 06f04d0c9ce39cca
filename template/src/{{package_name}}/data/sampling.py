"""A sampler whose order is a pure function of (seed, epoch), so a run can resume mid-epoch.

Each yielded key is `(epoch, index)`: datasets derive per-sample augmentation randomness from
(seed, epoch, index) instead of from worker RNG streams. Resuming therefore needs no replay of
skipped batches, and gives the same bits whatever `num_workers` or `persistent_workers` is.

A large dataset (a prepared corpus has a window per block_size tokens: 14 million in 1 GB of
text) is not shuffled by a materialised permutation, which would cost 8 bytes a sample and a
second of start-up per epoch, but by a keyed bijection of the positions (a Feistel network),
evaluated a chunk at a time as the epoch goes: no memory, and still a function of (seed, epoch).

With per-sample `weights` (class-balanced sampling), an epoch is instead `num_samples` draws
with replacement, each sample drawn in proportion to its weight, again from (seed, epoch).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from torch.utils.data import Sampler

SampleKey = tuple[int, int]

LAZY_ABOVE = 1 << 20  # datasets with more samples are shuffled by `shuffled_positions`
CHUNK = 1 << 16  # positions computed at a time by the lazy order
ROUNDS = 4  # of the Feistel network
# A sample drawn again in the same epoch of a weighted order gets `epoch + repeat * REDRAW` as
# its key's epoch: the datasets derive augmentation from the key, so the copies look different
REDRAW = 1 << 32


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
    With `weights`, the epoch's order is weighted draws with replacement (see the module's
    docstring), sharded and resumed the same way. With `limit` (unshuffled orders only: a
    bounded validation), the order is `limit` positions spread evenly over the whole set.
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
        weights: np.ndarray | None = None,
        limit: int = 0,
    ) -> None:
        if limit and shuffle:
            raise ValueError("limit selects from an unshuffled order only")
        self.num_samples = num_samples
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.rank = rank
        self.world_size = world_size
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)
        # Samples in an epoch's order: at most `limit` of them (0: no limit)
        self.subset = min(limit, num_samples) if limit else num_samples
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
        return self.shuffle and self.weights is None and self.num_samples > LAZY_ABOVE

    def _epoch_length(self) -> int:
        """Positions in the epoch's order, all ranks together (cut to whole global batches)."""
        if self.drop_last:
            global_batch = self.batch_size * self.world_size
            return self.num_samples // global_batch * global_batch
        return self.subset

    def _rank_count(self, rank: int | None = None) -> int:
        """Positions rank, rank + w, rank + 2w, ... below the epoch's length (this rank's, or `rank`'s)."""
        rank = self.rank if rank is None else rank
        return max(0, -(-(self._epoch_length() - rank) // self.world_size))

    def most_batches(self) -> int:
        """The batches of the rank with the most (the first)."""
        return self._batches(self._rank_count(0))

    def fewest_batches(self) -> int:
        """The batches of the rank with the fewest (the last one): how many every rank has, so
        the point between two of them is one where every rank can meet in a collective."""
        return self._batches(self._rank_count(self.world_size - 1))

    def _batches(self, samples: int) -> int:
        return samples // self.batch_size if self.drop_last else -(-samples // self.batch_size)

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

    def _rank_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """(key epochs, sample indices) of this rank's share of the epoch's order."""
        epochs = None
        if self.weights is not None:
            # A stream of its own ("2"), so a weighted epoch shares no draws with a shuffled one
            rng = np.random.default_rng([self.seed, self.epoch, 2])
            order = rng.choice(self.num_samples, size=self.num_samples, p=self.weights)
            epochs = self.epoch + repeats(order) * REDRAW
        elif self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(self.num_samples)
        else:
            order = np.arange(self.subset) * self.num_samples // self.subset  # evenly spread
        if epochs is None:
            epochs = np.full(len(order), self.epoch, dtype=np.int64)
        if self.drop_last:
            global_batch = self.batch_size * self.world_size
            order = order[: len(order) // global_batch * global_batch]
        return epochs[self.rank : len(order) : self.world_size], order[self.rank :: self.world_size]

    def __iter__(self) -> Iterator[SampleKey]:
        if self.lazy:
            return self._lazy_keys()
        first = self.start_batch * self.batch_size
        epochs, indices = (keys[first:] for keys in self._rank_keys())
        if self.drop_last:
            end = len(indices) // self.batch_size * self.batch_size
            epochs, indices = epochs[:end], indices[:end]
        return ((int(e), int(i)) for e, i in zip(epochs, indices, strict=True))

    def __len__(self) -> int:
        return self._remaining()


def repeats(order: np.ndarray) -> np.ndarray:
    """For each position of `order`, how many times its value occurred earlier in `order`."""
    by_value = np.argsort(order, kind="stable")  # equal values stay in order of position
    sorted_values = order[by_value]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])  # of each run
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    out = np.empty(len(order), dtype=np.int64)
    out[by_value] = np.arange(len(order)) - run_start
    return out
