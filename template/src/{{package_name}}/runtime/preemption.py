"""Graceful stops: SIGTERM or SIGUSR1 (what cluster schedulers send before a kill) end the run
after the current step, or between two batches of an evaluation (which a resumed run redoes),
with a checkpoint, instead of losing everything since the last one.

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


class Stopped(Exception):
    """A stop signal abandoned a pass that has no resumable position (an evaluation): the loop
    writes the checkpoint of its last step, from which a resumed run redoes the pass."""


class StopFlag:
    """The signals received within `catch_stop_signals`, in order; true once there is one."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.received)

    @property
    def signal(self) -> int | None:
        """The last signal received, if any."""
        return self.received[-1] if self.received else None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)


@contextlib.contextmanager
def catch_stop_signals(*others: signal.Signals) -> Iterator[StopFlag]:
    """Within the block, a stop signal (or one of `others`, such as a sweep's SIGINT) only sets
    the flag; the loop checks it between steps and between evaluation batches."""
    flag = StopFlag()
    previous = {sig: signal.signal(sig, flag._handle) for sig in (*others, *STOP_SIGNALS)}
    try:
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
