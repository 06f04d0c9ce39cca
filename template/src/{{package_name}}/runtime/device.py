"""Where the run executes: the device, and how the CPUs are shared between torch and the loader."""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import torch
from torch.utils.data import Dataset

from . import available_cpus
from .errors import DEVICE_EXPECTED, ConfigError
from .seeding import capture_rng_state, restore_rng_state


def resolve_device(name: str = "auto") -> torch.device:
    """Pick the device once, at start-up: cuda, else mps, else cpu (or the explicit `name`)."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:  # spelled as a device, but of a type torch does not know
        raise ConfigError(f"device must be {DEVICE_EXPECTED}, got {name!r}") from None
    available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}
    if device.type in available and not available[device.type]():
        raise ConfigError(
            f"device={name}, but this machine has no {device.type.upper()} device; try device=auto"
        )
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ConfigError(f"device={name}, but this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


# Where torch's fused AdamW runs. On the CPU it took a twentieth of the foreach step's time (the default
# language model, 2 cores): a few milliseconds a step
FUSED_ADAMW_DEVICES = ("cuda", "cpu")


def adamw_implementation(device: torch.device) -> str:
    """How AdamW updates weights on `device`: "fused", one kernel a step for all of them, on CUDA
    (as nanoGPT and torchtitan run it) and the CPU; elsewhere "foreach", a few kernels over lists of
    tensors, which every device has. environment.json records it."""
    return "fused" if device.type in FUSED_ADAMW_DEVICES else "foreach"


# Below this a sample is cheaper to load in the training process than to ship from a worker, whose
# pickling and wake-ups (they preempt torch's threads) cost more than the loading it hides: about
# the break-even for the default models on two cores. The built-in data takes a quarter of it
CHEAP_SAMPLE_SECONDS = 2e-4


def seconds_per_sample(dataset: Dataset, chunks: int = 8, chunk: int = 8, budget_s: float = 0.2) -> float:
    """Seconds to produce one sample of `dataset` (read, decode, augment): the fastest mean of a few
    chunks, as a stall of the machine only adds time. The random streams are restored after."""
    rng = capture_rng_state()
    means: list[float] = []
    start_all = time.perf_counter()
    for first in range(0, min(len(dataset), chunks * chunk), chunk):
        indices = range(first, min(first + chunk, len(dataset)))
        start = time.perf_counter()  # wall time: waiting on a disk is what workers hide too
        for index in indices:
            dataset[index]
        means.append((time.perf_counter() - start) / len(indices))
        if time.perf_counter() - start_all > budget_s:
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
    """Workers and threads for this process; `-1` workers and `0` threads mean "pick", and a resumed
    run keeps its earlier picks (`saved`): results depend on the thread count.

    On an accelerator the loader may take all but one core. On a CPU, cheap data is loaded in the
    training process and every core computes; dear data gets a worker per core (idle once ahead)
    while torch keeps half the cores, so that a busy worker does not stall its parallel kernels.
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
