"""Graceful stops: SIGTERM or SIGUSR1 (what cluster schedulers send before a kill) end the run
after the current step, with a checkpoint, instead of losing everything since the last one.

Windows has no SIGUSR1: there only SIGTERM stops a run this way (Ctrl-C still interrupts it)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

# EX_TEMPFAIL from sysexits.h: "try again later". Rerunning with resume=auto continues the run.
EXIT_PREEMPTED = 75

# The stop signals this platform has, looked up by name: `signal.SIGUSR1` would not even import
# on Windows
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGUSR1") if hasattr(signal, name)
)


class Preempted(Exception):
    """Raised after the stop checkpoint is written; `main` turns it into EXIT_PREEMPTED."""

    # Every rank agrees on the stopping step, so they can leave the process group together
    raised_on_every_rank = True


class StopFlag:
    def __init__(self) -> None:
        self.signal: int | None = None

    def __bool__(self) -> bool:
        return self.signal is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signal = signum


@contextlib.contextmanager
def catch_stop_signals() -> Iterator[StopFlag]:
    """Within the block, a stop signal only sets the flag; the loop checks it between steps."""
    flag = StopFlag()
    previous = {sig: signal.signal(sig, flag._handle) for sig in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
