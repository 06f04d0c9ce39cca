"""Files ptscaffold writes for itself (the template cache's config, an update's journal):
written whole, never through a link, and on the disk before they count."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from . import _interrupts


def write_whole(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename: a reader sees the old content or the new, and a
    link at `path` is replaced, never written through."""
    # A signal waits the few milliseconds until the file is whole or gone: between making the
    # partial file and knowing its name it would leave the file behind.
    with _interrupts.held():
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(partial, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
            raise
    sync_folder(path.parent)


def sync_folder(folder: Path) -> None:
    """Make a rename or new entry in `folder` last through a power cut (where supported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
