"""Git repositories that a template's files would plant in a project.

Git opens a folder as a repository, and runs the commands its config and hooks name
(fsmonitor, filters, hooks) on the next git command there, in two cases:

- the folder holds a `.git` (a folder, or a file saying `gitdir: <path>`);
- the folder is laid out as a git directory itself: git's `is_git_directory()` wants `HEAD`,
  and `refs` and `objects` in the folder or in the one its `commondir` file names
  (`objects` not even that when GIT_OBJECT_DIRECTORY is set). Here `HEAD` with `refs`, or
  `HEAD` with `commondir`, is enough, whatever `HEAD` holds and whether it is a file or a
  symlink: a rule wider than git's cannot be wrong in the template's favour.

Names compare without case, as a case-insensitive file system (macOS, Windows) matches them.
An untrusted template may plant neither, at any depth, the project's top folder included.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from .errors import PtscaffoldError

_DOT_GIT = ".git"
_GIT_DIRECTORY_ENTRIES = ("HEAD", "commondir", "objects", "refs")


def _names(folder: Path) -> frozenset[str]:
    """The lower-cased names in `folder`; none for a file, a missing path or a symlink (git
    opening the folder a symlink points to opens that folder, not one the template wrote)."""
    if folder.is_symlink():
        return frozenset()
    try:
        return frozenset(name.lower() for name in os.listdir(folder))
    except (NotADirectoryError, FileNotFoundError):
        return frozenset()


def _git_directory_entries(names: frozenset[str]) -> list[str]:
    """The entries that make a folder with these names a git directory, or [] if it is none."""
    if "head" not in names or not ({"refs", "commondir"} & names):
        return []
    return [entry for entry in _GIT_DIRECTORY_ENTRIES if entry.lower() in names]


def _every_path(root: Path) -> Iterator[str]:
    """Every file, link and folder under `root`, relative to it (links are not followed)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            yield Path(dirpath, name).relative_to(root).as_posix()


def planted_repository(root: Path, written: Iterable[str] | None = None) -> str | None:
    """What makes git open a repository among the paths a template wrote under `root`, or None.

    `written` lists those paths (relative to `root`; folders that were created among them);
    None means everything under `root`, a fresh render. A path is refused when it is, passes
    through or (a folder it created) holds a `.git`, or when a folder on its way down from
    `root`, `root` included, is laid out as a git directory.
    """
    names_of: dict[PurePosixPath, frozenset[str]] = {}
    for rel in _every_path(root) if written is None else written:
        parts = PurePosixPath(rel).parts
        for depth in range(len(parts) + 1):
            folder = PurePosixPath(*parts[:depth])
            if folder not in names_of:
                names_of[folder] = _names(root / folder)
            entries = _git_directory_entries(names_of[folder])
            if entries:
                where = "the project's top folder" if depth == 0 else f"{folder}/"
                return f"{where} laid out as a git directory ({', '.join(entries)})"
            if depth < len(parts) and parts[depth].lower() == _DOT_GIT:
                return str(folder / parts[depth])
        if _DOT_GIT in names_of[PurePosixPath(*parts)]:
            return f"{rel}/{_DOT_GIT}"
    return None


def refuse_planted(root: Path, src: str, written: Iterable[str] | None = None) -> None:
    """Raise PtscaffoldError when the template `src` planted a git repository (see
    `planted_repository` for `written`)."""
    found = planted_repository(root, written)
    if found is not None:
        raise PtscaffoldError(
            f"template {src} renders {found}, which git would open as a repository, running "
            "the commands its config and hooks name (fsmonitor, filters, hooks) on the next "
            "git command there: an untrusted template may not plant one (pass --trust if you "
            "trust the template)"
        )
