#!/usr/bin/env python3
"""Init + initial commit of a freshly generated project.

ptscaffold runs this after rendering (skip it with `ptscaffold new --no-git`). It is a plain
script, not a copier `_task`, so a plain `copier copy` of the template never needs --trust:

    python hooks/post_gen.py PROJECT_DIR

The commit works with no git identity configured: the user's name and email are used when
git knows them (config or GIT_AUTHOR_* / GIT_COMMITTER_*), a placeholder otherwise.

Every git call names the repository it means (`--git-dir`, `--work-tree`) and switches off
what could run a command (hooks, fsmonitor, signing): the files come from a template, and
git must not execute anything they contain.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FALLBACK_NAME = "ptscaffold"
FALLBACK_EMAIL = "ptscaffold@localhost"
MESSAGE = "Initial commit from ptscaffold"


# Command-line configuration wins over every config file.
SAFE = (
    "-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false",
    "-c", "commit.gpgSign=false", "-c", "safe.bareRepository=explicit",
)  # fmt: skip


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    repo = ["--git-dir", str(cwd / ".git"), "--work-tree", str(cwd)]
    return subprocess.run(["git", *SAFE, *repo, *args], cwd=cwd, capture_output=True, text=True)


def _configured(cwd: Path) -> set[str]:
    """Which of user.name, user.email and init.defaultbranch git already knows."""
    proc = _git(cwd, "config", "--get-regexp", r"^(user\.name|user\.email|init\.defaultbranch)$")
    keys = {line.split(" ", 1)[0].lower() for line in proc.stdout.splitlines() if line.strip()}
    if os.environ.get("GIT_AUTHOR_NAME") and os.environ.get("GIT_COMMITTER_NAME"):
        keys.add("user.name")
    if os.environ.get("GIT_AUTHOR_EMAIL") and os.environ.get("GIT_COMMITTER_EMAIL"):
        keys.add("user.email")
    return keys


def main(project: str | os.PathLike[str], message: str = MESSAGE) -> None:
    """`git init`, `git add -A` and one commit in `project`; raises RuntimeError on failure."""
    project = Path(project)
    known = _configured(project)
    init_opts = [] if "init.defaultbranch" in known else ["-c", "init.defaultBranch=main"]
    ident = []
    if "user.name" not in known:
        ident += ["-c", f"user.name={FALLBACK_NAME}"]
    if "user.email" not in known:
        ident += ["-c", f"user.email={FALLBACK_EMAIL}"]
    for name, args in (
        ("init", [*init_opts, "init", "--quiet"]),
        ("add", ["add", "--all"]),
        ("commit", [*ident, "commit", "--quiet", "--no-verify", "-m", message]),
    ):
        proc = _git(project, *args)
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            last = detail[-1] if detail else f"exit status {proc.returncode}"
            raise RuntimeError(f"git {name} failed in {project}: {last}")


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit(f"usage: {sys.argv[0]} [PROJECT_DIR]")
    try:
        main(sys.argv[1] if len(sys.argv) == 2 else ".")
    except RuntimeError as exc:
        sys.exit(f"error: {exc}")
