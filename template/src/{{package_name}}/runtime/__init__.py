"""Machinery of a run: devices, processes, precision, signals, seeds, atomic files."""

import os
import platform


def available_cpus() -> int:
    """CPUs this process may run on (respects affinity masks set by schedulers and torchrun). Here,
    free of torch, for the sweep: it shares them between its members and starts fast."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity API
        return os.cpu_count() or 1


def is_alive(host: str, pid: int) -> bool:
    """Whether process `pid` of `host` still runs: presumed so on another host, or on Windows
    (where os.kill terminates). Free of torch too: compare and the sweep ask it of runs and workers."""
    try:
        if host == platform.node() and os.name == "posix":
            os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True
