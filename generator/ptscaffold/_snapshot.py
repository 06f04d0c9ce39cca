"""Undo for `update`: a journal of the project as it was, and putting it back exactly.

Copier updates a project in place (it refuses one with uncommitted changes), writing files,
deleting some and recording conflicts in git's index. Before it starts, `keep()` writes a
journal into the repository's git folder (`<git-dir>/ptscaffold-update/`): the index file,
HEAD, every ref, and the type, size, time and inode of every tracked file. While copier works,
each path it is about to write into the project is added to the journal first (`record`).

`restore()` puts back the index and the refs, rewrites from the index each tracked file that
changed or vanished, and removes what the update itself made that git does not track: the
paths it recorded and the `.rej` files beside tracked ones. Any other file is left alone, such
as a checkpoint a training run writes meanwhile, ignored or not. (A migration a trusted
template runs is a program of its own: what it writes is not recorded.)

The journal outlives a process killed outright (SIGKILL, a crash): the next update finds it
(`pending`) and restores from it before anything else. No file is copied up front: in a clean
repository the index holds every tracked file's content.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from . import _files, _git, _interrupts

JOURNAL = "ptscaffold-update"
# Kinds of the journal's log entries (a letter, the path from the repository's top, NUL):
WRITES = "w"  # the update is about to write this file or symlink, or to create this folder
USERS = "u"  # an untracked file of the user's where the old template renders one: copier may
# delete it

# How long a restore waits for a git that copier started, still running when it was stopped.
GIT_GRACE_S = 10.0

Stat = tuple[int, int, int, int]  # mode, size, mtime_ns, inode


def _stat(path: Path) -> Stat | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)


def _git_out(root: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    return _git.run(*args, cwd=root, input=input, check=check).stdout


def git_dir(root: Path) -> Path:
    """The git folder of the repository whose top is `root` (its own one for a worktree)."""
    return Path(_git_out(root, "rev-parse", "--absolute-git-dir").strip())


def _refs(root: Path) -> dict[str, str]:
    out = _git_out(root, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())


def _head(root: Path) -> str:
    """The commit HEAD names ('' before the first commit)."""
    return _git_out(root, "rev-parse", "-q", "--verify", "HEAD", check=False).strip()


def _children() -> set[int]:
    """This process's running children, where the system lists them (Linux)."""
    found: set[int] = set()
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            found.update(int(pid) for pid in listing.read_text().split())
        except (OSError, ValueError):
            continue
    return found


def _wait_for_exit(pids: set[int], timeout: float) -> None:
    """Wait until `pids` (children of this process) have exited, without reaping them: a git
    that copier started may still be writing into the project when copier is stopped."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    break
            except ChildProcessError:  # already reaped
                break
            time.sleep(0.005)


class Snapshot:
    """The state of the git project at `root` (its top level), to restore it later."""

    def __init__(self, root: Path) -> None:
        folder = git_dir(root)
        tracked = set(_git_out(root, "ls-files", "-z").split("\0")) - {""}
        state = {
            "head": (folder / "HEAD").read_text(encoding="utf-8"),
            "commit": _head(root),
            "refs": _refs(root),
            "tracked": {rel: _stat(root / rel) for rel in sorted(tracked)},
            "rejects": sorted(f"{rel}.rej" for rel in tracked if _stat(root / f"{rel}.rej")),
        }
        index = folder / "index"
        self._load(root, folder / JOURNAL, state, index.read_bytes() if index.is_file() else None)
        self.children = _children()

    def _load(self, root: Path, journal: Path, state: dict[str, Any], index: bytes | None) -> None:
        self.root = root
        self.folder = journal
        self.git_dir = journal.parent
        self.state = state
        self.index = index
        self.head: str = state["head"]
        self.commit: str = state["commit"]
        self.refs: dict[str, str] = state["refs"]
        self.tracked: dict[str, Stat | None] = {
            rel: tuple(stat) if stat else None  # type: ignore[misc]
            for rel, stat in state["tracked"].items()
        }
        self.rejects: set[str] = set(state["rejects"])
        self.written: dict[str, None] = {}  # in the order written (a dict: no duplicates)
        self.users: set[str] = set()
        self.children: set[int] = set()  # those running before the update: not its gits
        self._log_fd: int | None = None

    # --- the journal -----------------------------------------------------------------------

    def keep(self) -> None:
        """Write the journal, whole or not at all; `record` adds to it, `discard` removes it."""
        partial = self.folder.with_name(f"{JOURNAL}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        if self.index is not None:
            _files.write_whole(partial / "index", self.index)
        _files.write_whole(partial / "log", b"")
        _files.write_whole(partial / "state.json", json.dumps(self.state).encode())
        os.replace(partial, self.folder)
        _files.sync_folder(self.git_dir)
        self._log_fd = os.open(self.folder / "log", os.O_WRONLY | os.O_APPEND)

    @classmethod
    def pending(cls, root: Path) -> Snapshot | None:
        """The journal of an update killed before it finished, if there is one."""
        folder = git_dir(root) / JOURNAL
        shutil.rmtree(folder.with_name(f"{JOURNAL}.partial"), ignore_errors=True)
        try:
            state = json.loads((folder / "state.json").read_bytes())
        except FileNotFoundError:  # none, or one killed while it was being discarded
            shutil.rmtree(folder, ignore_errors=True)
            return None
        index = folder / "index"
        snapshot = cls.__new__(cls)
        snapshot._load(root, folder, state, index.read_bytes() if index.is_file() else None)
        # A last entry without its NUL was being written: the path it names was not yet.
        for entry in (folder / "log").read_bytes().split(b"\0")[:-1]:
            kind, rel = os.fsdecode(entry[:1]), os.fsdecode(entry[1:])
            if kind == WRITES:
                snapshot.written[rel] = None
            else:
                snapshot.users.add(rel)
        return snapshot

    def discard(self) -> None:
        """Remove the journal (the update is done, or undone)."""
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None
        with _interrupts.deferred():
            (self.folder / "state.json").unlink(missing_ok=True)  # from here on, no journal
            shutil.rmtree(self.folder, ignore_errors=True)
            shutil.rmtree(self.folder.with_name(f"{JOURNAL}.partial"), ignore_errors=True)

    def _append(self, kind: str, rel: str) -> None:
        if self._log_fd is not None:
            os.write(self._log_fd, os.fsencode(kind + rel) + b"\0")
            os.fsync(self._log_fd)

    def record(self, rel: str) -> None:
        """The update is about to write `rel` (from the top): note it and the folders that
        writing it creates, so that a restore removes exactly those."""
        for path in (*reversed(Path(rel).parents[:-1]), Path(rel)):
            name = path.as_posix()
            if name not in self.written and not os.path.lexists(self.root / name):
                self._append(WRITES, name)
                self.written[name] = None

    def note_users(self, rel: str) -> None:
        """`rel` is a file of the user's that git does not track, where the old template
        renders one: copier may delete it, and a restore cannot bring it back."""
        path = self.root / rel
        if rel in self.tracked or rel in self.users or not os.path.lexists(path):
            return
        if path.is_dir() and not path.is_symlink():
            return
        self._append(USERS, rel)
        self.users.add(rel)

    def moved_since(self) -> bool:
        """Whether HEAD or a ref is no longer what the journal says (a commit made since)."""
        head = (self.git_dir / "HEAD").read_text(encoding="utf-8")
        return head != self.head or _refs(self.root) != self.refs

    # --- putting it back -------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Put the project back; return the user's files that could not be (none in practice:
        only an untracked file where the old template had one, which copier may delete)."""
        with _interrupts.deferred():
            _wait_for_exit(_children() - self.children, GIT_GRACE_S)
            return self._restore()

    def _restore(self) -> list[str]:
        self._put_back_index()
        self._put_back_refs()
        rewrite = []
        for rel, before in self.tracked.items():
            if _stat(self.root / rel) != before:
                (self.root / rel).unlink(missing_ok=True)
                if before is not None:
                    rewrite.append(rel)
            if f"{rel}.rej" not in self.rejects:  # git apply's, beside the file it patched
                (self.root / f"{rel}.rej").unlink(missing_ok=True)
        made = [rel for rel in self.written if rel not in self.tracked]
        for rel in sorted(made, key=lambda rel: rel.count("/"), reverse=True):
            self._remove_made(self.root / rel)
        if rewrite:
            listed = "\0".join(rewrite)
            _git_out(self.root, "checkout-index", "--force", "-z", "--stdin", input=listed)
        return sorted(rel for rel in self.users if not os.path.lexists(self.root / rel))

    @staticmethod
    def _remove_made(path: Path) -> None:
        """Remove what the update made there: a file or link, or a folder left empty (one
        that another program put files into meanwhile stays, with those files)."""
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.rmdir()
        else:
            path.unlink(missing_ok=True)

    def _put_back_index(self) -> None:
        index = self.git_dir / "index"
        if self.index is None:
            index.unlink(missing_ok=True)
            return
        # git's own way to replace the index: a git still running cannot write over it
        lock = index.with_name("index.lock")
        deadline = time.monotonic() + GIT_GRACE_S
        while True:
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                if time.monotonic() > deadline:  # left by a git that was killed
                    lock.unlink(missing_ok=True)
                time.sleep(0.01)
        with os.fdopen(fd, "wb") as fh:
            fh.write(self.index)
        os.replace(lock, index)

    def _put_back_refs(self) -> None:
        head = self.git_dir / "HEAD"
        if head.read_text(encoding="utf-8") != self.head:
            head.write_text(self.head, encoding="utf-8")
        refs = _refs(self.root)
        for name, sha in self.refs.items():
            if refs.get(name) != sha:
                _git_out(self.root, "update-ref", "--no-deref", name, sha)
        for name in set(refs) - set(self.refs):
            _git_out(self.root, "update-ref", "--no-deref", "-d", name)
