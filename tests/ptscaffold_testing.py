"""Helpers and fixtures shared by the ptscaffold generator tests (imported, not a conftest)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_PATHS = ("copier.yml", "template", "hooks")
GIT_IDENTITY_VARS = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "EMAIL",
)


@pytest.fixture(scope="session")
def ptscaffold_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One template cache per test process: tests never touch the user's cache."""
    return tmp_path_factory.mktemp("ptscaffold-cache")


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ptscaffold_cache: Path) -> Path:
    """No git identity, an empty HOME, private caches. Returns the fake HOME."""
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("PTSCAFFOLD_CACHE_DIR", str(ptscaffold_cache / "ptscaffold"))
    monkeypatch.setenv("COPIER_CACHE_DIR", str(ptscaffold_cache / "copier"))
    for var in GIT_IDENTITY_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


def invoke(*args: str, input: str | None = None):
    """Run the CLI in-process; stdout and stderr are separate."""
    from ptscaffold.cli import app

    return CliRunner().invoke(app, list(args), prog_name="ptscaffold", input=input)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def commit_all(cwd: Path, message: str) -> None:
    git(cwd, "add", "-A")
    git(cwd, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-qm", message)


def tree_state(path: Path) -> dict[str, str]:
    """Every file's content hash outside .git, plus git's view (HEAD, index, status)."""
    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            file = Path(dirpath, name)
            state[str(file.relative_to(path))] = hashlib.sha256(file.read_bytes()).hexdigest()
    if (path / ".git").exists():
        state["<HEAD>"] = git(path, "rev-parse", "HEAD", check=False)
        state["<status>"] = git(path, "status", "--porcelain", "--untracked-files=all")
        state["<index>"] = git(path, "ls-files", "--stage")
    return state


def copy_template(dest: Path) -> Path:
    """A copy of this repository's template (copier.yml, template/, hooks/), without its
    `_migrations`: they belong to this repository's releases, and the made-up versions the
    tests give a copy (0.0.1, 1.0.0, 99.0.0, ...) would run them between unrelated trees."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in TEMPLATE_PATHS:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    config = dest / "copier.yml"
    config.write_text(without_migrations(config.read_text()))
    return dest


def without_migrations(config: str) -> str:
    """copier.yml text with its `_migrations` block replaced by `_migrations: []`."""
    import re

    new, count = re.subn(r"(?m)^_migrations:.*\n(?:[ \t].*\n)*", "_migrations: []\n", config)
    assert count == 1, "`_migrations` not found in copier.yml"
    return new


def set_version(template_root: Path, version: str) -> None:
    config = template_root / "copier.yml"
    text = config.read_text()
    import re

    new, count = re.subn(
        r'(template_version:\s*\n\s*type:\s*str\s*\n\s*default:\s*)"[^"]+"',
        rf'\g<1>"{version}"',
        text,
    )
    assert count == 1, "template_version default not found in copier.yml"
    config.write_text(new)


# What `pip install .` reads from a checkout
BUILD_INPUTS = (
    "pyproject.toml", "README.md", "copier.yml", "template", "hooks", "generator", "CHANGELOG.md"
)  # fmt: skip


def source_copy(dest: Path, *, releases: bool = True) -> Path:
    """The files a build of this checkout reads, optionally without the releases bundle."""
    dest.mkdir(parents=True)
    ignore = ("__pycache__",) if releases else ("__pycache__", "*.bundle")
    for name in BUILD_INPUTS:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(*ignore))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def build_wheel(source: Path, out: Path) -> Path:
    """A wheel of `source`, built offline with this interpreter's build backend."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(out), str(source)],
        check=True,
    )  # fmt: skip
    (wheel,) = out.glob("ptscaffold-*.whl")
    return wheel
