"""A local git repository of the bundled template, so projects update with no network.

Each template version is one commit tagged `v<version>`. Projects record `CANONICAL_URL` as
`_src_path`; while ptscaffold runs copier, git is told (`url.<repo>.insteadOf=...`) to read
that address from this repository, and `git-remote-ptscaffold` serves it to plain git. The
repository keeps every version this machine has run, plus every earlier release from
`_releases.bundle` (see `_history.py`), so a newer ptscaffold can still render the version an
older project was made with.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from . import _template
from ._template import GIT_URL, LEGACY_URLS, TEMPLATE_PATHS

CACHE_ENV_VAR = "PTSCAFFOLD_CACHE_DIR"

# Fixed identity and dates: the same template tree always gives the same commit.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "ptscaffold",
    "GIT_AUTHOR_EMAIL": "ptscaffold@localhost",
    "GIT_COMMITTER_NAME": "ptscaffold",
    "GIT_COMMITTER_EMAIL": "ptscaffold@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_TERMINAL_PROMPT": "0",
}
_SKIP = {"__pycache__", ".DS_Store"}


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV_VAR)
    if override:
        return Path(override).expanduser().absolute()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ptscaffold", appauthor=False))


def repo_path() -> Path:
    return cache_dir() / "template.git"


def _git(*args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    full_env = {**os.environ, **_GIT_ENV, **(env or {})}
    proc = subprocess.run(
        ["git", "--git-dir", str(repo_path()), *args],
        env=full_env,
        capture_output=True,
        text=True,
    )
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(f"git {args[0]} failed in {repo_path()}: {detail[-1] if detail else ''}")
    return proc.stdout.strip()


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise processes sharing one cache (pytest-xdist, two terminals)."""
    path = cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "lock", "a+") as fh:
        try:
            import fcntl
        except ImportError:  # Windows: no lock, races are unlikely for a person
            yield
            return
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _fingerprint(root: Path) -> str:
    """Cheap identity of the template files (paths, sizes, mtimes): no git call when unchanged."""
    digest = hashlib.sha256(str(root).encode())
    for top in TEMPLATE_PATHS:
        base = root / top
        if base.is_file():
            entries = [base]
        else:
            entries = []
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
                entries += [Path(dirpath, f) for f in sorted(filenames) if f not in _SKIP]
        for entry in entries:
            if entry.suffix in (".pyc", ".pyo"):
                continue
            st = entry.stat()
            digest.update(f"{entry.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _stamp_path() -> Path:
    return cache_dir() / "stamps.json"


def _read_stamps() -> dict[str, str]:
    try:
        return json.loads(_stamp_path().read_text())
    except (OSError, ValueError):
        return {}


def _write_tree(root: Path) -> str:
    """Hash the template files at `root` into the cache repo; return the tree id."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": str(root)}
        present = [p for p in TEMPLATE_PATHS if (root / p).exists()]
        # -f: the template's own .gitignore (if any) must not hide template files.
        _git(
            "add", "-f", "-A", "--", *present,
            ":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.py[co]",
            ":(exclude,glob)**/.DS_Store",
            env=env,
        )  # fmt: skip
        return _git("write-tree", env=env)


def _import_history(bundle: Path) -> None:
    """Fetch tags of earlier releases from the wheel's bundle, never replacing local ones."""
    heads = _git("bundle", "list-heads", str(bundle)).splitlines()
    wanted = []
    for line in heads:
        _sha, _, ref = line.partition(" ")
        if ref.startswith("refs/tags/") and not _git("tag", "-l", ref[10:]):
            wanted.append(f"{ref}:{ref}")
    if wanted:
        _git("fetch", "--quiet", "--no-tags", str(bundle), *wanted)


def _init_repo() -> Path:
    repo = repo_path()
    if not (repo / "HEAD").is_file():
        repo.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "init", "--quiet", "--bare", str(repo)],
            check=True,
            capture_output=True,
            env={**os.environ, **_GIT_ENV},
        )
        _git("symbolic-ref", "HEAD", "refs/heads/main")
    return repo


def commit_version(root: Path, version: str) -> bool:
    """Tag the template tree at `root` as `v<version>`; False when the tag already had it."""
    tag = f"v{version}"
    tree = _write_tree(root)
    current = _git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{tree}}", check=False)
    if current == tree:
        return False
    commit = _git("commit-tree", tree, "-m", f"ptscaffold template {version}")
    _git("tag", "-f", tag, commit)
    _git("update-ref", "refs/heads/main", commit)
    return True


def ensure_repo(root: Path | None = None, version: str | None = None) -> Path:
    """Make sure the cache repo holds tag `v<version>` with the tree at `root`. Idempotent.

    If the tag exists with another tree (a development build changed the template without a
    version bump), the tag moves to the current tree.
    """
    root = root or _template.template_root()
    version = version or _template.template_version(root)
    repo = repo_path()
    bundle = _template.history_bundle()
    key = f"v{version} {_fingerprint(root)} {_fingerprint_bundle(bundle)}"
    with _locked():
        stamps = _read_stamps()
        if stamps.get(str(repo)) == key and (repo / "refs").is_dir():
            return repo
        _init_repo()
        if bundle is not None:
            _import_history(bundle)
        commit_version(root, version)
        stamps[str(repo)] = key
        _stamp_path().write_text(json.dumps(stamps))
    return repo


def _fingerprint_bundle(bundle: Path | None) -> str:
    if bundle is None:
        return "-"
    st = bundle.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def has_tag(tag: str) -> bool:
    return bool(_git("tag", "-l", tag, check=False))


def redirect_env(repo: Path) -> dict[str, str]:
    """Environment that makes git read the template's addresses (today's and 0.1.0's) from
    `repo`; other GIT_CONFIG_* entries are kept."""
    count = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    env = {"GIT_TERMINAL_PROMPT": "0"}
    for i, url in enumerate((GIT_URL, *LEGACY_URLS), start=count):
        env[f"GIT_CONFIG_KEY_{i}"] = f"url.{repo}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{i}"] = url
    env["GIT_CONFIG_COUNT"] = str(count + 1 + len(LEGACY_URLS))
    return env


@contextlib.contextmanager
def redirected(repo: Path) -> Iterator[None]:
    """Run copier with the template's addresses served from `repo`.

    Copier runs git through plumbum, which snapshots os.environ at import, so the variables
    go through `plumbum.local.env`. Copier keeps its own mirror of the URL; it lives in our
    cache (COPIER_CACHE_DIR is read from os.environ) unless the user chose another place.
    """
    from plumbum import local

    env = redirect_env(repo)
    saved = os.environ.get("COPIER_CACHE_DIR")
    if saved is None:
        os.environ["COPIER_CACHE_DIR"] = str(cache_dir() / "copier-mirrors")
    try:
        with local.env(**env), _locked():
            yield
    finally:
        if saved is None:
            os.environ.pop("COPIER_CACHE_DIR", None)


def versions() -> list[str]:
    """The template versions (`v<version>` tags) the cache repository holds, oldest first."""
    from packaging.version import InvalidVersion, Version

    found = []
    for tag in _git("tag", "-l", "v*", check=False).split():
        try:
            found.append((Version(tag[1:]), tag))
        except InvalidVersion:
            continue
    return [tag for _, tag in sorted(found)]


def has_ref(ref: str) -> bool:
    """Whether `ref` (a tag, branch or commit) names a commit of the cache repository."""
    return bool(_git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False))
