"""Machinery of a run: devices, processes, precision, signals, seeds, atomic files."""

import os


def available_cpus() -> int:
    """CPUs this process may run on (respects affinity masks set by schedulers and torchrun). Here,
    free of torch, for the sweep: it shares them between its members and starts fast."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity API
        return os.cpu_count() or 1
