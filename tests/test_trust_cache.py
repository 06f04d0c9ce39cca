"""The template cache runs nothing and renders nothing that the installed ptscaffold does not vouch
for: planted git configuration and hooks, rewritten release tags and links in the cache.

Every attack is planted for real in a cache of the test's own and would touch a marker file
(or overwrite a file of the user's); the marker must never appear.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import copier
import pytest
from ptscaffold import _cache, _questions, _template
from ptscaffold_testing import commit_all, git, invoke, isolated, ptscaffold_cache  # noqa: F401

OLD = "v0.1.0"  # a release the installed bundle carries
INSTALLED = f"v{_questions.template_version()}"

pytestmark = pytest.mark.skipif(
    _template.history_bundle() is None, reason="needs the releases bundle (_releases.bundle)"
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A template cache of this test alone, so that an attack never reaches another test."""
    path = tmp_path / "cache"
    monkeypatch.setenv(_cache.CACHE_ENV_VAR, str(path))
    monkeypatch.setenv("COPIER_CACHE_DIR", str(tmp_path / "copier"))
    return path


@pytest.fixture(scope="module")
def old_project_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed project of the 0.1.0 template (`_commit: v0.1.0`), made through a clean
    cache of its own."""
    root = tmp_path_factory.mktemp("old-project")
    project = root / "proj"
    with pytest.MonkeyPatch.context() as env:
        env.setenv(_cache.CACHE_ENV_VAR, str(root / "cache"))
        env.setenv("COPIER_CACHE_DIR", str(root / "copier"))
        env.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        env.setenv("GIT_CONFIG_NOSYSTEM", "1")
        with _cache.redirected(_cache.ensure_repo()):
            copier.run_copy(
                _template.CANONICAL_URL, project, vcs_ref=OLD, defaults=True, quiet=True
            )
        git(project, "init", "-q")
        commit_all(project, "made by ptscaffold 0.1.0")
    return project


@pytest.fixture
def old_project(old_project_template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(old_project_template, tmp_path / "proj", symlinks=True))


def _cache_git(repo: Path, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        input=input,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def _script(path: Path, marker: Path, then: str = "") -> Path:
    path.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n{then}")
    path.chmod(0o755)
    return path


def _plant_commands(cache: Path, tmp_path: Path) -> list[Path]:
    """The cache repository as someone prepared it before ptscaffold first used it: its config
    runs an fsmonitor and a clean filter (selected by info/attributes), and a hook watches
    every ref update. Returns the markers each of them would touch."""
    repo = cache / "template.git"
    cache.mkdir()
    _cache_git(repo, "init", "-q", "--bare")
    tools = tmp_path / "planted"
    tools.mkdir()
    markers = [tmp_path / f"ran-{name}" for name in ("fsmonitor", "filter", "hook")]
    fsmonitor = _script(tools / "fsmonitor", markers[0])
    clean = _script(tools / "clean", markers[1], then="exec cat\n")
    _cache_git(repo, "config", "core.fsmonitor", str(fsmonitor))
    _cache_git(repo, "config", "filter.planted.clean", str(clean))
    (repo / "info").mkdir(exist_ok=True)
    (repo / "info" / "attributes").write_text("* filter=planted\n")
    (repo / "hooks").mkdir(exist_ok=True)
    _script(repo / "hooks" / "reference-transaction", markers[2], then="cat >/dev/null\n")
    return markers


def _ls_remote(cwd: Path) -> subprocess.CompletedProcess[str]:
    """Plain git reading the template's address through the git-remote-ptscaffold helper."""
    assert shutil.which("git-remote-ptscaffold"), "pip install -e . installs the remote helper"
    return subprocess.run(
        ["git", "ls-remote", _template.GIT_URL],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- 1. the cache repository's own configuration and hooks --------------------------------------


@pytest.mark.parametrize("command", ["new", "update", "ls-remote"])
def test_commands_planted_in_the_cache_repository_never_run(
    command: str, cache: Path, tmp_path: Path, old_project_template: Path
):
    markers = _plant_commands(cache, tmp_path)
    if command == "new":
        result = invoke("new", str(tmp_path / "made"), "--defaults", "--no-git")
        assert result.exit_code == 0, result.stderr
    elif command == "update":
        project = shutil.copytree(old_project_template, tmp_path / "proj", symlinks=True)
        result = invoke("update", str(project))
        assert result.exit_code == 0, result.stderr
    else:
        listed = _ls_remote(tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert f"refs/tags/{OLD}" in listed.stdout and f"refs/tags/{INSTALLED}" in listed.stdout
    assert [marker.name for marker in markers if marker.exists()] == []


def _loosen(path: Path, bits: int) -> None:
    path.chmod(stat.S_IMODE(path.stat().st_mode) | bits)


def _new_is_refused(tmp_path: Path, needle: str) -> None:
    """`new` stops on the cache in one line holding `needle`, and writes no project."""
    dest = tmp_path / "made"
    result = invoke("new", str(dest), "--defaults", "--no-git")
    assert result.exit_code == 1
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not dest.exists()


@pytest.mark.parametrize("where", [".", "template.git/config", "template.git/refs/tags"])
def test_a_cache_others_can_write_is_refused_in_one_line(cache: Path, tmp_path: Path, where):
    _cache.ensure_repo()
    _loosen(cache / where, stat.S_IWOTH)
    _new_is_refused(tmp_path, "writable by other users")


def test_the_remote_helper_refuses_a_cache_others_can_write(cache: Path, tmp_path: Path):
    _cache.ensure_repo()
    _loosen(cache, stat.S_IWGRP | stat.S_IWOTH)
    listed = _ls_remote(tmp_path)
    assert listed.returncode != 0
    assert "writable by other users" in listed.stderr


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a folder away needs root"
)
@pytest.mark.parametrize("where", [".", "template.git"])
def test_a_cache_of_another_user_is_refused_in_one_line(cache: Path, tmp_path: Path, where):
    _cache.ensure_repo()
    os.chown(cache / where, 4242, 4242)
    _new_is_refused(tmp_path, "belongs to another user")


# --- 2. release tags are what the installed ptscaffold says they are ----------------------------


def _tampered_commit(repo: Path, tag: str, marker: Path) -> str:
    """A commit of `tag`'s template whose copier.yml adds a task touching `marker`."""
    config = _cache_git(repo, "show", f"{tag}:copier.yml")
    config += f"\n_tasks:\n  - touch {shlex.quote(str(marker))}\n"
    blob = _cache_git(repo, "hash-object", "-w", "--stdin", input=config)
    entries = [
        f"100644 blob {blob}\tcopier.yml" if line.endswith("\tcopier.yml") else line
        for line in _cache_git(repo, "ls-tree", tag).splitlines()
    ]
    tree = _cache_git(repo, "mktree", input="\n".join(entries) + "\n")
    return _cache_git(
        repo, "-c", "user.name=M", "-c", "user.email=m@example.com", "commit-tree", tree, "-m", "x"
    )


def _bundle_tags() -> dict[str, str]:
    """The commit of every release tag in the installed bundle."""
    listed = _cache_git(_cache.repo_path(), "bundle", "list-heads", str(_template.history_bundle()))
    return {ref: sha for sha, ref in (line.split() for line in listed.splitlines())}


def _refs(repo: Path) -> dict[str, str]:
    listed = _cache_git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in listed.splitlines())


@pytest.mark.parametrize(
    ("tag", "ref", "command"),
    [
        (OLD, f"refs/tags/{OLD}", "update"),
        (INSTALLED, f"refs/tags/{INSTALLED}", "update"),
        (INSTALLED, f"refs/tags/{INSTALLED}", "new"),
        # git reads `refs/<name>` before `refs/tags/<name>`: a ref that shadows the tag
        (OLD, f"refs/{OLD}", "update"),
    ],
    ids=["old-tag-update", "installed-tag-update", "installed-tag-new", "shadowing-ref-update"],
)
def test_a_rewritten_release_is_never_rendered(
    tag: str, ref: str, command: str, cache: Path, tmp_path: Path, old_project: Path
):
    repo = _cache.ensure_repo()
    released = _bundle_tags()
    marker = tmp_path / "ran-task"
    tampered = _tampered_commit(repo, tag, marker)
    _cache_git(repo, "update-ref", ref, tampered)
    if command == "new":
        result = invoke("new", str(tmp_path / "made"), "--defaults", "--no-git")
    else:
        result = invoke("update", str(old_project))
    assert result.exit_code == 0, result.stderr
    assert not marker.exists(), "a task of a rewritten release ran"
    refs = _refs(repo)
    assert {ref: refs.get(ref) for ref in released} == released, "the bundle's tags are back"
    assert tampered not in refs.values(), "no ref names the rewritten release any more"
    assert refs[f"refs/tags/{INSTALLED}"] == refs["refs/heads/main"]


# --- 3. no link in the cache is followed ----------------------------------------------------------


@pytest.mark.parametrize("name", ["stamps.json", "lock"])
def test_update_never_writes_through_a_link_in_the_cache(
    name: str, cache: Path, tmp_path: Path, old_project: Path
):
    """0.2.0 wrote stamps.json and opened `lock` (creating it) through a link there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "stamps.json").write_text("the user's own file\n")
    cache.mkdir()
    (cache / name).symlink_to(elsewhere / name)
    result = invoke("update", str(old_project))
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["stamps.json"]
    assert (elsewhere / "stamps.json").read_text() == "the user's own file\n"


@pytest.mark.parametrize("where", ["template.git", "template.git/config"])
def test_a_link_in_the_cache_repository_is_refused(cache: Path, tmp_path: Path, where: str):
    _cache.ensure_repo()
    link = cache / where
    elsewhere = tmp_path / "elsewhere" / link.name
    elsewhere.parent.mkdir()
    if where == "template.git":
        shutil.move(link, elsewhere)
    else:  # a config of someone else's, with a command in it
        monitor = _script(tmp_path / "fsmonitor", tmp_path / "ran-fsmonitor")
        elsewhere.write_text(f"{link.read_text()}\tfsmonitor = {monitor}\n")
        link.unlink()
    link.symlink_to(elsewhere)
    before = {p.name: p.stat().st_mtime_ns for p in elsewhere.parent.iterdir()}
    dest = tmp_path / "made"
    result = invoke("new", str(dest), "--defaults", "--no-git")
    assert result.exit_code == 1
    assert "symbolic link" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not dest.exists()
    assert {p.name: p.stat().st_mtime_ns for p in elsewhere.parent.iterdir()} == before
    assert not (tmp_path / "ran-fsmonitor").exists()
