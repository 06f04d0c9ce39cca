"""The CPUs this process may run on: what device.py shares between torch and the data loader, and
what a sweep shares between the members it runs side by side. No torch here: the sweep starts
fast."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """CPUs this process may run on (respects affinity masks set by schedulers and torchrun)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity API
        return os.cpu_count() or 1
