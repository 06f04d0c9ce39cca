"""Undo for `update`: what a project looked like before, and putting it back exactly.

Copier updates a project in place (it refuses one with uncommitted changes), writing files,
deleting some and recording conflicts in git's index. A `Snapshot` taken before records the
index file, every ref, and the type, size, time and inode of every file outside `.git`;
`restore()` puts back the index and the refs, rewrites from the index each tracked file that
changed or vanished, and deletes every file and folder that appeared. Nothing is copied up
front: in a clean repository the index holds every tracked file's content.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from ._copier import safe_git_env

Stat = tuple[int, int, int, int]  # mode, size, mtime_ns, inode


def _listing(root: Path) -> tuple[dict[str, Stat], set[str]]:
    files: dict[str, Stat] = {}
    dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        base = Path(dirpath)
        for name in dirnames:
            path = base / name
            if path.is_symlink():  # os.walk lists a link to a folder as a folder
                filenames.append(name)
            else:
                dirs.add(path.relative_to(root).as_posix())
        for name in filenames:
            path = base / name
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            files[rel] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return files, dirs


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Let a Ctrl-C wait until the block is done (a restore must not stop half way)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Snapshot:
    """The state of the git project at `root` (its top level), to restore it later."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.git_dir = Path(self._git("rev-parse", "--absolute-git-dir").strip())
        index = self.git_dir / "index"
        self.index = index.read_bytes() if index.is_file() else None
        self.head = (self.git_dir / "HEAD").read_bytes()
        self.refs = self._refs()
        self.tracked = set(self._git("ls-files", "-z").split("\0")) - {""}
        self.files, self.dirs = _listing(root)

    def _git(self, *args: str, input: str | None = None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env={**os.environ, **safe_git_env()},
            input=input,
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout

    def _refs(self) -> dict[str, str]:
        out = self._git("for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())

    def restore(self) -> list[str]:
        """Put the project back; return the files that could not be (none in practice:
        only an ignored file the update overwrote)."""
        with deferred_interrupts():
            return self._restore()

    def _restore(self) -> list[str]:
        files, dirs = _listing(self.root)
        index = self.git_dir / "index"
        if self.index is None:
            index.unlink(missing_ok=True)
        else:
            partial = index.with_name("index.ptscaffold-restore")
            partial.write_bytes(self.index)
            os.replace(partial, index)
        if (self.git_dir / "HEAD").read_bytes() != self.head:
            (self.git_dir / "HEAD").write_bytes(self.head)
        refs = self._refs()
        for name, sha in self.refs.items():
            if refs.get(name) != sha:
                self._git("update-ref", "--no-deref", name, sha)
        for name in set(refs) - set(self.refs):
            self._git("update-ref", "--no-deref", "-d", name)

        rewrite, lost = [], []
        for rel, stat in files.items():
            before = self.files.get(rel)
            if before == stat:
                continue
            if before is None or rel in self.tracked:
                path = self.root / rel
                path.unlink()
                if before is not None:
                    rewrite.append(rel)
            else:
                lost.append(rel)
        for rel in set(self.files) - set(files):
            (rewrite if rel in self.tracked else lost).append(rel)
        for rel in sorted(set(dirs) - self.dirs, key=len, reverse=True):
            with contextlib.suppress(OSError):
                (self.root / rel).rmdir()
        for rel in sorted(self.dirs - set(dirs)):
            (self.root / rel).mkdir(parents=True, exist_ok=True)
        if rewrite:
            self._git("checkout-index", "--force", "-z", "--stdin", input="\0".join(rewrite))
        return sorted(lost)
