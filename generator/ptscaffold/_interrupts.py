"""Ctrl-C, SIGTERM and SIGHUP stop a command the same way: through its clean-up.

Python turns Ctrl-C (SIGINT) into KeyboardInterrupt, but SIGTERM (`timeout`, a CI cancel) and
SIGHUP (a closed terminal) end the process on the spot, half way through writing files. While
`interruptible()` holds, they raise `Terminated`, a KeyboardInterrupt, so that `new` and
`update` undo their work for all three alike. The exit code says which one came: 128 + its
number (130, 143, 129), as a shell reports a process the signal ended.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

# The signals that stop a command (Windows has no SIGHUP).
STOPPING = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program was, as Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(interrupt: BaseException) -> int:
    """128 + the number of the signal that stopped the command (SIGINT for a plain Ctrl-C)."""
    return 128 + getattr(interrupt, "signum", signal.SIGINT)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def _ignore(signum: int, frame: FrameType | None) -> None:
    pass


@contextlib.contextmanager
def _handled(signums: tuple[int, ...], handler: object, *, over_own: bool) -> Iterator[None]:
    """`handler` for each of `signums` during the block; only the main thread can set one.

    A signal the caller ignores (as `nohup` does SIGHUP) stays ignored, and one it handles
    itself stays its own unless `over_own`.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in signums:
        current = signal.getsignal(signum)
        ours = current in (signal.SIG_DFL, signal.default_int_handler, _raise_terminated)
        if current not in (signal.SIG_IGN, None) and (ours or over_own):
            previous[signum] = signal.signal(signum, handler)  # type: ignore[arg-type]
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


def interruptible() -> contextlib.AbstractContextManager[None]:
    """SIGTERM and SIGHUP raise Terminated in the block, where they would end the process."""
    return _handled(STOPPING[1:], _raise_terminated, over_own=False)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done, then stop the command as they
    would have: for a step whose result the clean-up must know (a folder made and its name
    kept), which a signal between the two would leave behind unknown."""
    came: list[int] = []
    with _handled(STOPPING, lambda signum, frame: came.append(signum), over_own=True):
        yield
    if came:  # to the handler that was there before (raising it here)
        signal.raise_signal(came[0])


def deferred() -> contextlib.AbstractContextManager[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done (an undo must not stop half
    way); one that comes meanwhile is dropped: the command is already on its way out."""
    return _handled(STOPPING, _ignore, over_own=True)
