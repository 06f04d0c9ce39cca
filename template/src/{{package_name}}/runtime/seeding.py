"""Seeding, and the RNG state that checkpoints carry so that a resumed run draws the same numbers:
tensors and plain containers (numpy's state taken apart), as `weights_only=True` loads them."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int, deterministic: bool = False) -> None:
    """Seed python, numpy and torch (every device), and choose deterministic kernels or fast ones."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    torch.backends.cudnn.benchmark = not deterministic
    torch.backends.cudnn.deterministic = deterministic
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # Only when it changes something: the call imports torch._inductor (about 2 s of start-up)
    if deterministic or torch.are_deterministic_algorithms_enabled():
        torch.use_deterministic_algorithms(deterministic, warn_only=True)


def seed_worker(worker_id: int) -> None:
    """DataLoader `worker_init_fn`: derive numpy's and python's seeds from the worker's torch seed."""
    np.random.seed(torch.initial_seed() % 2**32)
    random.seed(torch.initial_seed() % 2**32)


def seed_new_rank(seed: int, rank: int) -> None:
    """Streams of its own for a rank that a resumed checkpoint has none for (it was saved on fewer
    processes): derived from the run's seed and the rank, so that ranks do not draw alike and a
    rerun draws the same."""
    derived = int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])
    random.seed(derived)
    np.random.seed(derived)
    torch.manual_seed(derived)  # the accelerators' too


# Devices with a generator of their own besides the CPU's, each behind a torch module of the same
# name with `get_rng_state(device)` and `set_rng_state(state, device)`
ACCELERATORS = ("cuda", "mps")


def capture_rng_state(device: torch.device | None = None) -> dict[str, Any]:
    """Python's, numpy's and torch's CPU streams, and `device`'s own where it is an accelerator: a
    rank draws on its own device alone, so a checkpoint keeps one device stream a rank and
    resumes on any number of visible devices."""
    kind, keys, pos, has_gauss, cached_gaussian = np.random.get_state()
    own = device is not None and device.type in ACCELERATORS
    return {
        "python": random.getstate(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
        "device": {device.type: getattr(torch, device.type).get_rng_state(device)} if own else {},
    }


def restore_rng_state(state: dict[str, Any], device: torch.device | None = None) -> None:
    """Set the streams `capture_rng_state` took, `device`'s from the saved device of its type. A
    stream saved on another type of device, or by an earlier version (which kept every GPU's
    under "cuda"), leaves `device`'s as seeded."""
    random.setstate(state["python"])
    numpy = state["numpy"]
    keys = numpy["keys"].numpy().astype(np.uint32)
    np.random.set_state((numpy["kind"], keys, numpy["pos"], numpy["has_gauss"], numpy["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if device is not None and device.type in state.get("device", {}):
        getattr(torch, device.type).set_rng_state(state["device"][device.type], device)
