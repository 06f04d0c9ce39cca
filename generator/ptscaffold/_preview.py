"""`update --dry-run`: what an update would change, worked out on a clone of the project.

The update runs for real, with every check, merge and migration it would make, but in a
throwaway clone of the project's repository (sharing its objects, read only), so the project's
files, index and refs are never written. A project with uncommitted changes or untracked files is
previewed as it is: they are copied into the clone and committed there, as the user would commit
them before the real update (which refuses them). Files that git ignores are not copied: where
the update would write one that exists in the project, the real update keeps the user's and
writes the template's beside it, and the preview lists it so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import _git
from ._snapshot import Snapshot
from ._update import KEPT_SUFFIX, repository_top, uncommitted, update
from .errors import UpdateRefused

# git's --name-status letters, as the preview names them
_KINDS = {"A": "added", "M": "modified", "D": "deleted", "R": "moved", "T": "modified"}


@dataclass(frozen=True)
class Change:
    kind: str  # added, modified, deleted, moved
    path: str  # relative to the project
    old_path: str | None = None  # where a moved file was
    added: int | None = None  # lines; None for a binary file
    deleted: int | None = None


@dataclass(frozen=True)
class Preview:
    project: Path
    old_version: str | None
    new_version: str | None
    changes: list[Change] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    # The uncommitted changes and untracked files the preview started from, as if committed;
    # empty: it started from HEAD
    uncommitted: list[str] = field(default_factory=list)


# Who commits the working tree's changes in the throwaway clone
_IDENTITY = [("user.name", "ptscaffold"), ("user.email", "ptscaffold@localhost")]


def _output(cwd: Path, *args: str, config: list[tuple[str, str]] | None = None) -> str:
    """Its output; a failure refuses the preview. --no-optional-locks: `status` must not refresh
    the project's index, which would write it."""
    env = _git.environment(config=config) if config else None
    proc = _git.run("--no-optional-locks", *args, cwd=cwd, env=env)
    if proc.returncode != 0:
        raise UpdateRefused(f"git {args[0]} failed in {cwd}: {proc.stderr.strip()[:300]}")
    return proc.stdout


def preview(
    project: str | os.PathLike[str] = ".",
    *,
    data: Mapping[str, Any] | None = None,
    conflict: Literal["inline", "rej"] = "inline",
    to: str | None = None,
    trust: bool = False,
) -> Preview:
    """What `update(project, ...)` would change, file by file, and the conflicts it would leave;
    the project is not written. Refuses as `update` would, but for uncommitted changes and
    untracked files: it starts from them as they are (listed in the result's `uncommitted`)."""
    project = Path(os.path.abspath(Path(project).expanduser()))
    if not project.exists():
        raise UpdateRefused(f"{project} does not exist")
    top = repository_top(project)
    if Snapshot.pending(top) is not None:
        raise UpdateRefused(
            f"an earlier update of {top} was killed before it finished; "
            "`ptscaffold update` undoes it first"
        )
    dirty = uncommitted(top, every_file=True)
    inside = project.relative_to(top)
    with tempfile.TemporaryDirectory(prefix="ptscaffold-preview.") as tmp:
        clone = Path(tmp) / top.name
        _output(Path(tmp), "clone", "--quiet", "--shared", "--no-tags", str(top), str(clone))
        if dirty:
            _commit_as_it_is(top, clone, dirty)
        result = update(
            clone / inside, data=data, conflict=conflict, to=to, trust=trust, quiet=True
        )
        changes = _changes(clone, inside)
    kept = [c.path for c in changes if c.kind == "added" and os.path.lexists(project / c.path)]
    return Preview(
        project=project,
        old_version=result.old_version,
        new_version=result.new_version,
        changes=changes,
        conflicts=sorted({*result.conflicts, *(path + KEPT_SUFFIX for path in kept)}),
        uncommitted=dirty,
    )


def _commit_as_it_is(top: Path, clone: Path, paths: list[str]) -> None:
    """The clone's HEAD made the project's working tree as it is: each of `paths` (relative to
    the repository) copied over, or deleted where the project has none, and committed."""
    for rel in paths:
        source, target = top / rel, clone / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif os.path.lexists(target):
            target.unlink()
        if source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(os.readlink(source))
        elif source.is_file():  # not a nested repository, which a clone cannot hold either
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _output(clone, "add", "--all")
    _output(clone, "commit", "--quiet", "-m", "the working tree as it is", config=_IDENTITY)


def _changes(clone: Path, inside: Path) -> list[Change]:
    """Every file the update changed in the clone, relative to the project, moves detected."""
    _output(clone, "add", "--all")
    where = ["--", inside.as_posix()]
    counts: dict[str, tuple[int | None, int | None]] = {}
    numstat = iter(
        _output(clone, "diff", "--cached", "-M", "--numstat", "-z", "HEAD", *where).split("\0")
    )
    for entry in numstat:
        if not entry:
            continue
        added, deleted, path = entry.split("\t")
        if not path:  # a move: the old path, then the new one, follow
            next(numstat)
            path = next(numstat)
        counts[path] = (
            None if added == "-" else int(added),
            None if deleted == "-" else int(deleted),
        )
    fields = _output(clone, "diff", "--cached", "-M", "--name-status", "-z", "HEAD", *where)
    items = iter(fields.split("\0"))
    changes = []
    for status in items:
        if not status:
            continue
        old = next(items) if status[0] == "R" else None
        path = next(items)
        added, deleted = counts.get(path, (None, None))
        changes.append(
            Change(
                kind=_KINDS.get(status[0], "modified"),
                path=_relative(path, inside),
                old_path=_relative(old, inside) if old else None,
                added=added,
                deleted=deleted,
            )
        )
    return sorted(changes, key=lambda c: c.path)


def _relative(path: str, inside: Path) -> str:
    return Path(path).relative_to(inside).as_posix() if inside.parts else path
