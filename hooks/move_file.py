#!/usr/bin/env python3
"""Migration: carry the user's edits of a generated file to the path the template moved it to.

Copier sees a moved template file as one file deleted and another added: on update it deletes
the user's copy at the old path and writes a fresh one at the new path, with no warning. A
`before` migration that `git mv`s the file does not fix that: copier then merges the user's
file into the new one against an empty base, so every user edit comes back as a conflict.

So copier.yml runs this script as an `after` migration of the template version that moved the
file (paths are relative to the project and may use answers, e.g. `src/{{ package_name }}/x.py`):

    _migrations:
      - version: "1.2.0"
        command: ["{{ _copier_python }}", "{{ _copier_conf.src_path }}/hooks/move_file.py",
                  "OLD/PATH", "NEW/PATH"]

It does the merge copier does for a file that stays put: base = the old template version's
rendering of OLD (rendered again here, with the project's previous answers), ours = the user's
OLD (from HEAD: copier updates only a clean project), theirs = the fresh NEW. Overlaps get
copier's conflict markers and are marked unmerged in git's index. A user who had deleted OLD
gets no NEW either.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

LABELS = ["-L", "before updating", "-L", "last update", "-L", "after updating"]


def _git(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], input=input, capture_output=True)


def _at_head(path: str) -> bytes | None:
    proc = _git("show", f"HEAD:./{path}")
    return proc.stdout if proc.returncode == 0 else None


def _old_rendering(path: str, answers_file: str) -> bytes | None:
    """OLD as the template version the project came from rendered it (None: not rendered)."""
    import copier
    import yaml

    answers = yaml.safe_load(_at_head(answers_file) or b"") or {}
    ref = os.environ.get("VERSION_FROM") or answers.get("_commit")
    data = {k: v for k, v in answers.items() if not str(k).startswith("_")}
    with tempfile.TemporaryDirectory(prefix="ptscaffold-move.") as tmp:
        copier.run_copy(
            str(Path(__file__).resolve().parents[1]),
            tmp,
            data=data,
            vcs_ref=ref,
            defaults=True,
            overwrite=True,
            quiet=True,
            skip_tasks=True,
            unsafe=True,
        )
        rendered = Path(tmp, path)
        return rendered.read_bytes() if rendered.is_file() else None


def _mark_unmerged(path: str, base: bytes, ours: bytes, theirs: bytes) -> None:
    """Record the three versions in git's index, as copier does for its own conflicts."""
    full = _git("rev-parse", "--show-prefix").stdout.decode().strip() + path
    mode = "100755" if os.access(path, os.X_OK) else "100644"
    lines = [f"0 {'0' * 40}\t{full}"]
    for stage, blob in ((1, base), (2, ours), (3, theirs)):
        sha = _git("hash-object", "-w", "--stdin", input=blob).stdout.decode().strip()
        lines.append(f"{mode} {sha} {stage}\t{full}")
    _git("update-index", "--index-info", input="\n".join(lines).encode())


def main(old: str, new: str, answers_file: str = ".copier-answers.yml") -> int:
    new_path = Path(new)
    if not new_path.is_file():  # this version does not render NEW for these answers
        return 0
    ours = _at_head(old)
    if ours is None:
        # OLD was not rendered before, or the user deleted it: then NEW goes too, as copier
        # keeps a file the user deleted deleted.
        try:
            if _old_rendering(old, answers_file) is not None:
                new_path.unlink()
        except Exception as exc:
            print(f"move_file.py: cannot render the previous {old} ({exc})", file=sys.stderr)
        return 0
    theirs = new_path.read_bytes()
    try:
        base = _old_rendering(old, answers_file) or b""
    except Exception as exc:  # merge without a base: every difference becomes a conflict
        print(f"move_file.py: cannot render the previous {old} ({exc})", file=sys.stderr)
        base = b""
    with tempfile.TemporaryDirectory(prefix="ptscaffold-move.") as tmp:
        files = []
        for name, blob in (("ours", ours), ("base", base), ("theirs", theirs)):
            files.append(Path(tmp, name))
            files[-1].write_bytes(blob)
        merged = _git("merge-file", "-p", *LABELS, *map(str, files))
    if merged.returncode > 127:  # binary file or error: keep the user's version
        new_path.write_bytes(ours)
        return 0
    new_path.write_bytes(merged.stdout)
    Path(old).unlink(missing_ok=True)
    if merged.returncode > 0:
        _mark_unmerged(new, base, ours, theirs)
        print(f"move_file.py: {new} (moved from {old}) has conflicts", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(f"usage: {Path(sys.argv[0]).name} OLD_PATH NEW_PATH [ANSWERS_FILE]")
    sys.exit(main(*sys.argv[1:]))
