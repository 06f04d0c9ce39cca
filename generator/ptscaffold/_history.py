"""The released template versions, read from this repository's own history, and their bundle.

A project made by ptscaffold 0.1.0 records `_commit: v0.1.0`; to update it, a newer ptscaffold
must render the 0.1.0 template too, on any machine. So every install carries every earlier
release in `_releases.bundle`, a file kept in the repository beside this module.

No tags are needed to find the releases. `template_version` in copier.yml names the version
under development; the commit that changes it starts the next version, so a version's release
is the last commit on main's first-parent line that carries it. The version in the working
tree is the one being built, and is not in the bundle: the cache adds it from the installed
template.

When template_version is bumped, rebuild the bundle (tests/test_release.py fails until then):

    python -m ptscaffold._history

The bundle holds one commit per release (copier.yml, template/ and hooks/ at that commit),
tagged `v<version>` and made exactly as the runtime cache makes them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from . import _cache, _git
from ._template import TEMPLATE_PATHS

BUNDLE = Path(__file__).resolve().parent / "_releases.bundle"

# The version line in copier.yml (pyproject.toml's hatch version pattern reads the same)
_VERSION = re.compile(
    r'template_version:\s*\n\s*type:\s*str\s*\n\s*default:\s*"(?P<version>[^"]+)"'
)


def version_at(checkout: Path, commit: str) -> str | None:
    """template_version in copier.yml at `commit` (None where it has none)."""
    proc = _git.run("show", f"{commit}:copier.yml", cwd=checkout)
    found = _VERSION.search(proc.stdout) if proc.returncode == 0 else None
    return found.group("version") if found else None


def releases(checkout: Path, head: str = "HEAD") -> list[tuple[str, str]]:
    """(version, commit) of every release before `head`'s version, oldest first.

    Walks the first-parent line of `head`: where template_version changes between a commit
    and its parent, the parent is the release of the older version.
    """
    line = _git.run("rev-list", "--first-parent", head, cwd=checkout, check=True).stdout.split()
    found: dict[str, str] = {}
    newer = version_at(checkout, line[0]) if line else None
    for commit in line[1:]:
        version = version_at(checkout, commit)
        if version is not None and version != newer and version not in found:
            found[version] = commit
        newer = version if version is not None else newer
    return list(reversed(found.items()))


def _extract(checkout: Path, commit: str, dest: Path) -> None:
    archive = _git.run(
        "archive", "--format=tar", commit, "--", *TEMPLATE_PATHS, cwd=checkout, check=True,
        text=False,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def build_bundle(
    checkout: Path, out: Path, found: list[tuple[str, str]] | None = None
) -> list[str]:
    """Write a bundle of the releases of `checkout` (or `found`); return the tags it holds."""
    found = releases(checkout) if found is None else found
    if not found:
        raise SystemExit(f"no released template version in the history of {checkout}")
    saved = os.environ.get(_cache.CACHE_ENV_VAR)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[_cache.CACHE_ENV_VAR] = str(Path(tmp) / "cache")
        try:
            _cache.init_repo()
            for version, commit in found:
                src = Path(tmp) / version
                _extract(checkout, commit, src)
                _cache.commit_version(src, version)
            out = out.absolute()
            out.parent.mkdir(parents=True, exist_ok=True)
            _cache.git("bundle", "create", str(out), "--tags")
        finally:
            if saved is None:
                os.environ.pop(_cache.CACHE_ENV_VAR, None)
            else:
                os.environ[_cache.CACHE_ENV_VAR] = saved
    return [f"v{version}" for version, _ in found]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ptscaffold._history", description=__doc__)
    parser.add_argument("--repo", type=Path, default=Path("."), help="ptscaffold checkout")
    parser.add_argument("--out", type=Path, default=BUNDLE, help="bundle to write")
    args = parser.parse_args(argv)
    tags = build_bundle(args.repo, args.out)
    print(f"wrote {args.out} with {', '.join(tags)}", file=sys.stderr)


if __name__ == "__main__":
    main()
