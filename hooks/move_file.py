#!/usr/bin/env python3
"""Migration: carry the user's edits of generated files to the paths the template moved them to.

Copier sees a moved template file as one file deleted and another added: on update it deletes
the user's copy at the old path and writes a fresh one at the new path, with no warning. A
`before` migration that `git mv`s the file does not fix that: copier then merges the user's
file into the new one against an empty base, so every user edit comes back as a conflict.

So copier.yml runs this script as an `after` migration of the template version that moved the
files, one OLD NEW pair per moved file (paths are relative to the project and may use answers,
e.g. `src/{{ package_name }}/x.py`):

    _migrations:
      - version: "1.2.0"
        command: ["{{ _copier_python }}", "{{ _copier_conf.src_path }}/hooks/move_file.py",
                  "OLD/PATH", "NEW/PATH", "OTHER/OLD", "OTHER/NEW"]

For each pair it does the merge copier does for a file that stays put: base = the old template
version's rendering of OLD (rendered again here, once for all the pairs, with the project's
previous answers), ours = the user's OLD (from HEAD: copier updates only a clean project),
theirs = the fresh NEW. Overlaps get copier's conflict markers and are marked unmerged in git's
index. A pair whose NEW this version does not render is skipped (a file that exists only for
some answers), and so is one whose OLD the old version did not render; a user who had deleted
OLD gets no NEW either.

An odd number of paths ends with the answers file (by default `.copier-answers.yml`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

ANSWERS_FILE = ".copier-answers.yml"
LABELS = ["-L", "before updating", "-L", "last update", "-L", "after updating"]
USAGE = "OLD_PATH NEW_PATH [OLD_PATH NEW_PATH ...] [ANSWERS_FILE]"


def _git(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], input=input, capture_output=True)


def _at_head(path: str) -> bytes | None:
    proc = _git("show", f"HEAD:./{path}")
    return proc.stdout if proc.returncode == 0 else None


def _old_renderings(paths: Iterable[str], answers_file: str) -> dict[str, bytes | None]:
    """Each of `paths` as the template version the project came from rendered it (None: not
    rendered), from one rendering of that version."""
    import copier
    import yaml

    answers = yaml.safe_load(_at_head(answers_file) or b"") or {}
    if not isinstance(answers, dict):
        raise ValueError(f"{answers_file} is not a copier answers file")
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
        return {path: _read(Path(tmp, path)) for path in paths}


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _mark_unmerged(path: str, base: bytes, ours: bytes, theirs: bytes) -> None:
    """Record the three versions in git's index, as copier does for its own conflicts."""
    full = _git("rev-parse", "--show-prefix").stdout.decode().strip() + path
    mode = "100755" if os.access(path, os.X_OK) else "100644"
    lines = [f"0 {'0' * 40}\t{full}"]
    for stage, blob in ((1, base), (2, ours), (3, theirs)):
        sha = _git("hash-object", "-w", "--stdin", input=blob).stdout.decode().strip()
        lines.append(f"{mode} {sha} {stage}\t{full}")
    _git("update-index", "--index-info", input="\n".join(lines).encode())


def _merge(ours: bytes, base: bytes, theirs: bytes) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="ptscaffold-move.") as tmp:
        files = []
        for name, blob in (("ours", ours), ("base", base), ("theirs", theirs)):
            files.append(Path(tmp, name))
            files[-1].write_bytes(blob)
        return _git("merge-file", "-p", *LABELS, *map(str, files))


def move(old: str, new: str, previous: dict[str, bytes | None] | None) -> None:
    """Carry the user's OLD into NEW; `previous` maps OLD to the old version's rendering of it
    (None as a whole: that rendering failed)."""
    new_path = Path(new)
    rendered = None if previous is None else previous.get(old)
    if previous is not None and rendered is None:
        return  # the old version did not render OLD: a file there is the user's own
    ours = _at_head(old)
    if ours is None:
        # The user deleted OLD: then NEW goes too, as copier keeps a deleted file deleted.
        # (Unless the old rendering failed: then NEW stays, as nothing says OLD was ever there.)
        if rendered is not None:
            new_path.unlink()
        return
    theirs = new_path.read_bytes()
    # Without a base (the old rendering failed) every difference becomes a conflict
    base = rendered or b""
    merged = _merge(ours, base, theirs)
    if merged.returncode > 127:  # binary file or error: keep the user's version
        new_path.write_bytes(ours)
        return
    new_path.write_bytes(merged.stdout)
    Path(old).unlink(missing_ok=True)
    _drop_rejection(old)
    if merged.returncode > 0:
        _mark_unmerged(new, base, ours, theirs)
        print(f"move_file.py: {new} (moved from {old}) has conflicts", file=sys.stderr)


def _drop_rejection(old: str) -> None:
    """With `--conflict rej` copier applies the user's diff to OLD, the user's own version by
    then, so it rejects the user's edits into OLD.rej before it deletes OLD: the edits this
    migration carried into NEW, not a conflict left to resolve."""
    rejection = f"{old}.rej"
    if _at_head(rejection) is None:
        Path(rejection).unlink(missing_ok=True)


def main(pairs: Sequence[tuple[str, str]], answers_file: str = ANSWERS_FILE) -> int:
    # A NEW this version does not render for these answers has nothing to carry edits into
    moves = [(old, new) for old, new in pairs if Path(new).is_file()]
    if not moves:
        return 0
    try:
        previous = _old_renderings([old for old, _ in moves], answers_file)
    except Exception as exc:
        print(f"move_file.py: cannot render the previous version ({exc})", file=sys.stderr)
        previous = None
    for old, new in moves:
        move(old, new, previous)
    return 0


def parse_args(args: Sequence[str]) -> tuple[list[tuple[str, str]], str]:
    """OLD NEW pairs and the answers file from the command line (SystemExit: bad usage)."""
    if len(args) < 2:
        sys.exit(f"usage: {Path(sys.argv[0]).name} {USAGE}")
    answers_file = args[-1] if len(args) % 2 else ANSWERS_FILE
    paths = args[:-1] if len(args) % 2 else args
    return list(zip(paths[::2], paths[1::2], strict=True)), answers_file


if __name__ == "__main__":
    sys.exit(main(*parse_args(sys.argv[1:])))
