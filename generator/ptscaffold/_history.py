"""Release helper: bundle every released template version for the wheel.

A project made by ptscaffold 0.1.0 records `_commit: v0.1.0`; to update it, ptscaffold 0.2.0
must render the 0.1.0 template too. Run this from a checkout of the ptscaffold repository,
with its release tags (`v0.1.0`, ...) fetched, before building the wheel:

    python -m ptscaffold._history generator/ptscaffold/_history.bundle
    python -m build

The bundle holds one commit per released version (copier.yml, template/ and hooks/ at that
tag), made exactly as the runtime cache makes them. The wheel ships it (hatch `artifacts`),
and the cache repository fetches the versions it lacks from it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from packaging.version import InvalidVersion, Version

from . import _cache
from ._template import TEMPLATE_PATHS


def _release_tags(checkout: Path) -> list[tuple[Version, str]]:
    out = subprocess.run(
        ["git", "tag", "--list", "v*"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.split()
    tags = []
    for tag in out:
        try:
            tags.append((Version(tag[1:]), tag))
        except InvalidVersion:
            continue
    return sorted(tags)


def _extract(checkout: Path, tag: str, dest: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", tag, "--", *TEMPLATE_PATHS],
        cwd=checkout,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def build_bundle(checkout: Path, out: Path) -> list[str]:
    """Write a bundle of every `v<version>` tag of `checkout`; return the tags it holds."""
    tags = _release_tags(checkout)
    if not tags:
        raise SystemExit(f"no v<version> tags in {checkout}: nothing to bundle")
    saved = os.environ.get(_cache.CACHE_ENV_VAR)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[_cache.CACHE_ENV_VAR] = str(Path(tmp) / "cache")
        try:
            _cache._init_repo()
            for version, tag in tags:
                src = Path(tmp) / tag
                _extract(checkout, tag, src)
                _cache.commit_version(src, str(version))
            out = out.absolute()
            out.parent.mkdir(parents=True, exist_ok=True)
            _cache._git("bundle", "create", str(out), "--tags")
        finally:
            if saved is None:
                os.environ.pop(_cache.CACHE_ENV_VAR, None)
            else:
                os.environ[_cache.CACHE_ENV_VAR] = saved
    return [tag for _, tag in tags]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ptscaffold._history", description=__doc__)
    parser.add_argument("out", type=Path, help="bundle to write")
    parser.add_argument("--repo", type=Path, default=Path("."), help="ptscaffold checkout")
    args = parser.parse_args(argv)
    tags = build_bundle(args.repo, args.out)
    print(f"wrote {args.out} with {', '.join(tags)}", file=sys.stderr)


if __name__ == "__main__":
    main()
