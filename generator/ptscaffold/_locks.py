"""A folder held by one process at a time.

The lock is a POSIX `flock` on the folder itself: nothing is left behind, and the kernel lets
go of it when the process ends, however it ends (even by SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def held(folder: Path) -> Iterator[int | None]:
    """Hold `folder` for the block; BlockingIOError at once if another process holds it.

    Yields the folder's open descriptor (None where there is no flock: Windows).
    """
    try:
        import fcntl
    except ImportError:
        yield None
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield fd
    finally:
        os.close(fd)
