"""Where the run executes: the device, how the CPUs are shared between torch and the loader, and
how host memory is kept between steps."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import NamedTuple

import torch
from torch.utils.data import Dataset

from ..config import ConfigError, bad_device
from .cpus import available_cpus
from .seeding import capture_rng_state, restore_rng_state


def resolve_device(name: str = "auto") -> torch.device:
    """Pick the device once, at start-up: cuda, else mps, else cpu (or the explicit `name`)."""
    if name != "auto":
        try:
            device = torch.device(name)
        except RuntimeError:  # spelled as a device, but of a type torch does not know
            raise ConfigError(bad_device(name)) from None
        available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}
        if device.type in available and not available[device.type]():
            raise ConfigError(
                f"device={name}, but this machine has no {device.type.upper()} device; try device=auto"
            )
        if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(
                f"device={name}, but this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


# glibc's mallopt parameters, and the values set. Blocks up to 32 MiB (glibc's ceiling) come from
# the heap, and up to 1 GiB of freed heap stays in the process
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
TRIM_THRESHOLD, MMAP_THRESHOLD = 1 << 30, 32 << 20


def keep_freed_memory() -> None:
    """Stop glibc from giving a step's freed tensors back to the OS, only to map them again.

    torch allocates CPU tensors with plain malloc. glibc serves large blocks with fresh
    mappings and trims its heap when much of it is free, adapting both thresholds to what the
    process has allocated so far; with an unlucky history, each step's activations are
    unmapped after the step and faulted back in, page by page, during the next (seen with the
    default CNN on five times the built-in data: a fifth of the step time, in some processes
    and not others). Fixed thresholds keep that memory in the process, as torch's caching
    allocator does on a GPU. A no-op where malloc is not glibc's.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process already runs on
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


# A sample that takes less than this to load is cheaper to load in the training process than to
# ship from a worker: the worker's pickling and its wake-ups, which preempt torch's threads, cost
# more than the loading it would hide. About where the two break even for the default models on
# two cores; the built-in data takes a quarter of it
CHEAP_SAMPLE_SECONDS = 2e-4


def seconds_per_sample(dataset: Dataset, chunks: int = 8, chunk: int = 8, budget_s: float = 0.2) -> float:
    """Seconds to produce one sample of `dataset` (read, decode, augment), from its first few.

    Timed in chunks, and the fastest chunk's mean taken: a stall of the machine only ever adds
    time, and must not make cheap data look dear. Random streams are restored afterwards, so
    probing changes no result.
    """
    rng = capture_rng_state()
    means: list[float] = []
    spent = 0.0
    for first in range(0, min(len(dataset), chunks * chunk), chunk):
        indices = range(first, min(first + chunk, len(dataset)))
        start = time.perf_counter()  # wall time: waiting on a disk is what workers hide too
        for index in indices:
            dataset[(0, index)]  # the (epoch, index) keys that ResumableSampler yields
        seconds = time.perf_counter() - start
        means.append(seconds / len(indices))
        spent += seconds
        if spent > budget_s:
            break
    restore_rng_state(rng)
    return min(means, default=0.0)


class CpuBudget(NamedTuple):
    """DataLoader workers and torch intra-op threads of this process."""

    num_workers: int
    threads: int


def cpu_budget(
    device: torch.device,
    num_workers: int,
    threads: int,
    dataset: Dataset,
    saved: dict[str, int] | None = None,
) -> CpuBudget:
    """Workers and threads for this process; `-1` workers and `0` threads mean "pick".

    A resumed run keeps what it picked before (`saved`, from its checkpoint): results depend on
    the thread count, and the data's measured cost can differ on a busier or quieter machine.

    On an accelerator the model runs elsewhere, so the loader may take all but one core. On a
    CPU run workers and torch's threads share the cores, and what is best depends on the data:
    data that is cheap to load is loaded in the training process, and every core computes; data
    that is dear gets a worker per core (workers sleep once they are ahead, so they take only
    the CPU the data needs) while torch keeps half the cores, so that a busy worker does not
    stall its parallel kernels.
    """
    if saved is not None:
        num_workers = saved["num_workers"] if num_workers < 0 else num_workers
        threads = threads or saved["threads"]
    cpus = max(1, available_cpus() // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    if device.type != "cpu":
        workers = min(8, max(0, cpus - 1)) if num_workers < 0 else num_workers
        return CpuBudget(workers, threads or torch.get_num_threads())
    if num_workers < 0:
        dear = cpus > 1 and seconds_per_sample(dataset) >= CHEAP_SAMPLE_SECONDS
        num_workers = cpus if dear else 0
    return CpuBudget(num_workers, threads or max(1, cpus - min(num_workers, cpus // 2)))
