"""Writing files and folders whole: a reader sees the old content or the new, never a part of it,
whenever the writer is killed, and once written the new content survives a power cut.

Every file the project writes whole (checkpoints, run records, exports, tables) goes through
`writing`. A folder written as one (a sharded checkpoint, an export) is built under a temporary
name and put in place by `replace_folder`. Only logs that grow line by line (metrics.csv) are
appended to instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


@contextlib.contextmanager
def writing(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content into; it replaces `path` when the block ends
    without an error, and is removed otherwise.

    The bytes go to a temporary file in the same directory (so the rename cannot cross file
    systems), reach the disk, and only then replace `path` in one atomic rename.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # Created as open() creates a file, its permissions set by the umask (mkstemp's are 0600)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        _replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_whole(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (see `writing`)."""
    with writing(path) as f:
        f.write(data)


def write_json(path: Path, record: Any) -> None:
    """Replace `path` with `record` as indented JSON (see `writing`)."""
    write_whole(path, (json.dumps(record, indent=2) + "\n").encode("utf-8"))


def copy_whole(src: Path, dst: Path) -> None:
    """Replace `dst` with a copy of `src` (see `writing`)."""
    with src.open("rb") as source, writing(dst) as f:
        shutil.copyfileobj(source, f)


def replace_folder(src: Path, dst: Path) -> None:
    """Put the finished folder `src` in place of `dst`, removing the older `dst`.

    Where the system swaps two folders in one step (Linux, macOS), `dst` is at every moment the
    old folder or the new one. Elsewhere a folder cannot be renamed onto another, so the old one
    is first moved aside: a kill between the two renames leaves `dst` absent, and the old folder
    and the new one whole under their temporary names.
    """
    if not dst.exists():
        move_into_place(src, dst)
    elif _swap(src, dst):
        fsync_dir(dst.parent)
        remove_entry(src)  # the old folder, now under the temporary name
    else:
        aside = dst.with_name(f".{dst.name}.old.tmp")
        remove_entry(aside)
        os.replace(dst, aside)
        os.replace(src, dst)
        fsync_dir(dst.parent)
        remove_entry(aside)


def move_into_place(src: Path, dst: Path) -> None:
    """Rename the finished `src` to `dst` (absent, or an empty folder), in one step that survives
    a power cut; an OSError where `dst` holds something."""
    os.replace(src, dst)
    fsync_dir(dst.parent)


def remove_entry(path: Path) -> None:
    """Delete a file or a folder."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(src: Path, dst: Path, attempts: int = 10) -> None:
    """os.replace, retried briefly where the OS refuses while another process has `dst` open
    (Windows: a reader, an indexer or a virus scanner)."""
    for attempt in range(attempts):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2**attempt)


def _swap(a: Path, b: Path) -> bool:
    """Exchange two paths in one step; False where the system or the file system cannot. Python
    has no call for it: the C library's, where it has one."""
    if sys.platform == "linux":
        call = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
        at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
        args = (at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange)
    elif sys.platform == "darwin":
        call = getattr(ctypes.CDLL(None, use_errno=True), "renamex_np", None)
        args = (os.fsencode(a), os.fsencode(b), 2)  # RENAME_SWAP
    else:
        return False
    if call is None:  # a C library older than the call
        return False
    if call(*args) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # a file system that cannot swap
        return False
    raise OSError(code, os.strerror(code), str(b))
