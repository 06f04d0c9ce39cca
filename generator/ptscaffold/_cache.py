"""A local git repository of the bundled template, so projects update with no network.

Each template version is one commit tagged `v<version>`. Projects record `CANONICAL_URL` as
`_src_path`; while ptscaffold runs copier, git is told (`url.<repo>.insteadOf=...`) to read
that address from this repository, and `git-remote-ptscaffold` serves it to plain git. The
repository keeps every version this machine has run, plus every earlier release from
`_releases.bundle` (see `_history.py`), so a newer ptscaffold can still render the version an
older project was made with.

Nothing in the cache is trusted for what it says; it is checked on every use:

- the cache folder and everything in the repository must belong to the user and be writable
  by nobody else, and hold no symbolic link (ptscaffold writes there, and runs git there);
- the repository's `config` and `HEAD` are exactly what ptscaffold writes (anything else
  there is rewritten), every git run on it switches hooks and fsmonitor off (GIT_CONFIG_*,
  which wins over any file), and the template is hashed with no work tree or filter, so no
  configuration in the cache runs a command;
- the release tags are those of the installed `_releases.bundle`, and the tag of the
  installed version is the commit its template files make (the same files always make the
  same commit); a tag that differs is restored before anything renders, and any other ref is
  dropped, except the tags of versions that no installed file knows (a development build, or
  an install without the bundle), which this machine made and a project may still record.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from . import _files, _git, _template
from ._template import GIT_URL, LEGACY_URLS, TEMPLATE_PATHS
from .errors import PtscaffoldError

CACHE_ENV_VAR = "PTSCAFFOLD_CACHE_DIR"

# Fixed identity and dates: the same template tree always gives the same commit. A new
# repository uses SHA-1 and files (the releases bundle does) whatever the user's defaults.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "ptscaffold",
    "GIT_AUTHOR_EMAIL": "ptscaffold@localhost",
    "GIT_COMMITTER_NAME": "ptscaffold",
    "GIT_COMMITTER_EMAIL": "ptscaffold@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_DEFAULT_HASH": "sha1",
    "GIT_DEFAULT_REF_FORMAT": "files",
}
# Beyond the hooks and fsmonitor that every git of ptscaffold's switches off: no replacement
# object stands in for a release, and no garbage collection starts in the background.
_CACHE_GIT_CONFIG = (
    ("core.useReplaceRefs", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
# The repository of the calling git (`git rev-parse --local-env-vars`): git runs a remote
# helper with GIT_DIR set, and none of these may point the cache's git elsewhere.
_REPOSITORY_VARS = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
    }
)  # fmt: skip
_MAIN = "refs/heads/main"
# The repository's own files, as `git init --bare` writes them: no include, remote, filter or
# command of any kind.
_OWN_FILES = {
    "config": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
    "HEAD": f"ref: {_MAIN}\n",
}
_SKIP = {"__pycache__", ".DS_Store"}
_POSIX = hasattr(os, "geteuid")
# Files git writes in the cache are the user's alone, whatever the user's umask.
_UMASK = 0o077 if _POSIX else -1


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV_VAR)
    if override:
        return Path(override).expanduser().absolute()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ptscaffold", appauthor=False))


def repo_path() -> Path:
    return cache_dir() / "template.git"


def git_env() -> dict[str, str]:
    """The environment of every git run on the cache (the remote helper's upload-pack too)."""
    outside = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARS}
    return _git.environment(outside, _CACHE_GIT_CONFIG)


def git(
    *args: str,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    check: bool = True,
) -> str:
    """`git ARGS` on the cache repository, in its environment (`env` adds to it); its output.
    A failure (with `check`) is a PtscaffoldError naming the repository."""
    proc = _git.run(
        "--git-dir", str(repo_path()), *args,
        env={**git_env(), **_GIT_ENV, **(env or {})}, input=input, umask=_UMASK,
    )  # fmt: skip
    if check and proc.returncode != 0:
        raise PtscaffoldError(f"git {args[0]} failed in {repo_path()}: {_git.last_line(proc, '')}")
    return proc.stdout.strip()


# --- the cache is the user's alone -------------------------------------------------------------


def _refuse_unless_private(path: Path, st: os.stat_result) -> None:
    """Refuse what someone else could have written: ptscaffold runs git on it."""
    if stat.S_ISLNK(st.st_mode):
        raise PtscaffoldError(
            f"the template cache holds a symbolic link, {path}; ptscaffold never follows one "
            f"there: remove {cache_dir()} (ptscaffold rebuilds it)"
        )
    if not _POSIX:
        return
    if st.st_uid != os.geteuid():
        raise PtscaffoldError(
            f"the template cache {path} belongs to another user (uid {st.st_uid}); git runs "
            f"in it, so it must be yours: set {CACHE_ENV_VAR} to a folder of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PtscaffoldError(
            f"the template cache {path} is writable by other users "
            f"(mode {stat.S_IMODE(st.st_mode):o}), who could plant commands in it: remove "
            f"{cache_dir()} (ptscaffold rebuilds it) or make it yours alone (chmod -R go-w)"
        )


def _private_cache_dir() -> Path:
    """The cache folder, made (for the user alone) where missing."""
    path = cache_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    _refuse_unless_private(path, path.stat())  # the folder named may be a link: it was chosen
    return path


def _refuse_foreign_files(repo: Path) -> None:
    """Everything in the repository must be the user's alone (it is hooks, config, refs)."""
    try:
        _refuse_unless_private(repo, os.lstat(repo))
    except FileNotFoundError:
        return
    for dirpath, dirnames, filenames in os.walk(repo):
        for name in (*dirnames, *filenames):
            path = Path(dirpath, name)
            _refuse_unless_private(path, os.lstat(path))


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise processes sharing one cache (pytest-xdist, two terminals). The lock is on the
    cache folder itself: it writes nothing there."""
    path = _private_cache_dir()
    try:
        import fcntl
    except ImportError:  # Windows: no lock, races are unlikely for a person
        yield
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


# --- the template as a commit ------------------------------------------------------------------


def _template_files(root: Path) -> list[str]:
    """The template's files at `root` (relative, with `/`), without caches and bytecode."""
    found = []
    for top in TEMPLATE_PATHS:
        if (root / top).is_file():
            found.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(root / top):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
            found += [
                Path(dirpath, name).relative_to(root).as_posix()
                for name in sorted(filenames)
                if name not in _SKIP and not name.endswith((".pyc", ".pyo"))
            ]
    return found


def _write_tree(root: Path) -> str:
    """Store the template files at `root` in the cache repo; return the tree id.

    The files are hashed as they are (`--no-filters`, no work tree): no attribute selects a
    filter and no fsmonitor is asked, so nothing configured anywhere runs, and one template
    always gives one tree.
    """
    files = _template_files(root)
    listing = "".join(f"{root / name}\n" for name in files)
    blobs = git("hash-object", "-w", "--no-filters", "--stdin-paths", input=listing).split()
    entries = "".join(
        f"{_mode(root / name)} {blob}\t{name}\0" for name, blob in zip(files, blobs, strict=True)
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git("update-index", "-z", "--index-info", input=entries, env=env)
        return git("write-tree", env=env)


def _mode(path: Path) -> str:
    return "100755" if path.stat().st_mode & stat.S_IXUSR else "100644"


def _version_commit(root: Path, version: str) -> str:
    """The commit of the template at `root` as version `version` (stored in the cache repo)."""
    return git("commit-tree", _write_tree(root), "-m", f"ptscaffold template {version}")


def init_repo() -> Path:
    """The cache repository, made where missing, with ptscaffold's own config and HEAD."""
    repo = repo_path()
    if not (repo / "HEAD").is_file():
        repo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # --template=: none of the hooks or other files of the user's git templates
        git("init", "--quiet", "--bare", "--template=")
    for name, text in _OWN_FILES.items():
        path = repo / name
        if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != text:
            _files.write_whole(path, text.encode("utf-8"))
    return repo


def _refs() -> dict[str, str]:
    """Every ref of the cache repository and the object it names (not peeled)."""
    listed = git("for-each-ref", "--format=%(objectname) %(refname)")
    return {ref: sha for sha, _, ref in (line.partition(" ") for line in listed.splitlines())}


def commit_version(root: Path, version: str) -> bool:
    """Tag the template tree at `root` as `v<version>`; False when the tag already had it."""
    tag, commit = f"refs/tags/v{version}", _version_commit(root, version)
    if _refs().get(tag) == commit:
        return False
    _update_refs([f"update {tag} {commit}", f"update {_MAIN} {commit}"])
    return True


def _update_refs(commands: list[str]) -> None:
    """Apply `update-ref --stdin` commands, to the refs themselves (never through a symref)."""
    if commands:
        git("update-ref", "--no-deref", "--stdin", input="".join(f"{c}\n" for c in commands))


# --- the releases, as the installed ptscaffold has them ----------------------------------------


def _bundle_tags(bundle: Path | None) -> dict[str, str]:
    if bundle is None:
        return {}
    heads = git("bundle", "list-heads", str(bundle))
    pairs = (line.partition(" ") for line in heads.splitlines())
    return {ref: sha for sha, _, ref in pairs if ref.startswith("refs/tags/")}


def _is_version_tag(ref: str) -> bool:
    from packaging.version import InvalidVersion, Version

    if not ref.startswith("refs/tags/v"):
        return False
    try:
        Version(ref.removeprefix("refs/tags/v"))
    except InvalidVersion:
        return False
    return True


def _restore_releases(root: Path, version: str, bundle: Path | None) -> None:
    """Make the refs exactly what the installed ptscaffold says they are.

    The bundle's tags are fetched again where they differ (a rewritten tag, say), the installed
    version's tag and main are set to the commit its files make, and any other ref (a branch,
    a ref shadowing a tag, a replacement object) is dropped.
    """
    released = _bundle_tags(bundle)
    installed = _version_commit(root, version)
    expected = {**released, f"refs/tags/v{version}": installed, _MAIN: installed}
    current = _refs()
    wrong = {ref for ref, sha in expected.items() if current.get(ref) != sha}
    fetch = sorted(ref for ref in wrong if released.get(ref) == expected[ref])
    if fetch:
        git("fetch", "--quiet", "--no-tags", str(bundle), *(f"+{ref}:{ref}" for ref in fetch))
    commands = [f"update {ref} {expected[ref]}" for ref in sorted(wrong) if ref not in fetch]
    # A version tag that no installed file knows stays: this machine made it from an earlier
    # install (a development build, or one without the bundle), and a project may record it.
    commands += [
        f"delete {ref}"
        for ref in sorted(current)
        if ref not in expected and not _is_version_tag(ref)
    ]
    if not (fetch or commands):
        return
    _update_refs(commands)
    current = _refs()
    still = sorted(ref for ref, sha in expected.items() if current.get(ref) != sha)
    if still:
        raise PtscaffoldError(
            f"the template cache {repo_path()} cannot be restored to the releases of the "
            f"installed ptscaffold ({', '.join(still)}): remove {cache_dir()} (it is rebuilt)"
        )


def ensure_repo(root: Path | None = None, version: str | None = None) -> Path:
    """Make the cache repo hold tag `v<version>` with the tree at `root` and every release of
    the installed bundle, exactly as the installed ptscaffold has them; checked, and restored
    where they differ, on every call. A cache that someone else could have written is refused.

    If the tag exists with another tree (a development build changed the template without a
    version bump), the tag moves to the current tree.
    """
    from ._questions import template_version  # here: it imports copier, slow to import

    root = root or _template.template_root()
    version = version or template_version(root)
    with _locked():
        _refuse_foreign_files(repo_path())
        repo = init_repo()
        _restore_releases(root, version, _template.history_bundle())
    return repo


def has_tag(tag: str) -> bool:
    return bool(git("tag", "-l", tag, check=False))


def redirect_env(repo: Path) -> dict[str, str]:
    """Environment that makes git read the template's addresses (today's and 0.1.0's) from
    `repo`; other GIT_CONFIG_* entries are kept."""
    urls = (GIT_URL, *LEGACY_URLS)
    return {
        "GIT_TERMINAL_PROMPT": "0",
        **_git.config_env(os.environ, ((f"url.{repo}.insteadOf", url) for url in urls)),
    }


@contextlib.contextmanager
def redirected(repo: Path) -> Iterator[None]:
    """Run copier with the template's addresses served from `repo`.

    Copier runs git through plumbum, which snapshots os.environ at import, so the variables
    go through `plumbum.local.env`. Copier clones the URL into a mirror of its own
    (COPIER_CACHE_DIR, read from os.environ); a mirror kept from run to run would be a second
    copy of the releases that nothing checks, so every run gets a new one, cloned from `repo`.
    """
    from plumbum import local

    saved = os.environ.get("COPIER_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="ptscaffold-", ignore_cleanup_errors=True) as tmp:
        os.environ["COPIER_CACHE_DIR"] = tmp
        try:
            with local.env(**redirect_env(repo)), _locked():
                yield
        finally:
            if saved is None:
                os.environ.pop("COPIER_CACHE_DIR", None)
            else:
                os.environ["COPIER_CACHE_DIR"] = saved


def versions() -> list[str]:
    """The template versions (`v<version>` tags) the cache repository holds, oldest first."""
    from packaging.version import InvalidVersion, Version

    found = []
    for tag in git("tag", "-l", "v*", check=False).split():
        try:
            found.append((Version(tag[1:]), tag))
        except InvalidVersion:
            continue
    return [tag for _, tag in sorted(found)]


def has_ref(ref: str) -> bool:
    """Whether `ref` (a tag, branch or commit) names a commit of the cache repository."""
    return bool(git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False))
