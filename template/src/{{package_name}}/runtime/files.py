"""Writing files and folders whole: a reader sees the old content or the new, never a part of it,
whenever the writer is killed, and once written the new content survives a power cut."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


@contextlib.contextmanager
def writing(path: Path) -> Iterator[BinaryIO]:
    """A temporary file in `path`'s directory (a rename cannot cross file systems), synced and
    renamed onto `path` when the block ends without an error, removed otherwise."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # Created as open() creates a file, its permissions set by the umask (mkstemp's are 0600)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        for attempt in range(8):  # Windows refuses while a reader or a virus scanner has `path` open
            with contextlib.suppress(PermissionError if attempt < 7 else ()):
                os.replace(tmp, path)
                break
            time.sleep(0.05 * 2**attempt)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_whole(path: Path, data: bytes) -> None:
    with writing(path) as f:
        f.write(data)


def write_json(path: Path, record: Any) -> None:
    write_whole(path, (json.dumps(record, indent=2) + "\n").encode("utf-8"))


def move_into_place(src: Path, dst: Path) -> None:
    """Rename the finished folder `src` to `dst` (absent or empty, else an OSError), durably."""
    os.replace(src, dst)
    fsync_dir(dst.parent)


def replace_folder(src: Path, dst: Path) -> None:
    """Put the finished folder `src` in place of `dst`, removing the older `dst`. No portable call
    renames a folder onto another, so the old one is moved aside first: a kill between the two
    renames leaves `dst` absent and the old folder whole as `.<dst name>.old.tmp`."""
    aside = dst.with_name(f".{dst.name}.old.tmp")
    remove_entry(aside)
    if dst.exists():
        os.replace(dst, aside)
    move_into_place(src, dst)
    remove_entry(aside)


def remove_entry(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (where directories can be opened: not on Windows)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
