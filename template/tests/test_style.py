"""The project passes its own lint and format checks, the ones CI and pre-commit run: an edit
that breaks them fails here too, before a push."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ruff") is None:
        pytest.fail("ruff is not installed: python -m pip install -e '.[dev]'", pytrace=False)
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check():
    proc = ruff("check", "--no-cache", ".")  # --no-cache: write nothing into the project
    assert proc.returncode == 0, (
        f"ruff check found problems (fix: ruff check --fix .)\n{proc.stdout}{proc.stderr}"
    )


def test_ruff_format():
    proc = ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, (
        f"ruff format would change files (fix: ruff format .)\n{proc.stdout}{proc.stderr}"
    )


def test_imports_keep_the_layers():
    """import-linter's contracts in pyproject.toml: every import points down the package's layers,
    and no folder imports a command."""
    script = Path(sys.executable).with_name("lint-imports")
    if importlib.util.find_spec("importlinter") is None or not script.exists():
        pytest.fail("import-linter is not installed: python -m pip install -e '.[dev]'", pytrace=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [str(script), "--no-cache", "--no-logo"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"an import breaks the package's layers\n{proc.stdout}{proc.stderr}"


def test_one_ruff_version_everywhere():
    """The dev extra and pre-commit pin the same ruff, and it is the one installed: formatting can
    change between ruff versions."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [re.fullmatch(r"ruff==(\S+)", dep) for dep in extra["optional-dependencies"]["dev"]]
    pinned = [m.group(1) for m in pins if m]
    assert len(pinned) == 1, "the dev extra pins ruff with ruff==VERSION"
    hook = re.search(
        r"ruff-pre-commit\s+rev: v(\S+)", (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    )
    assert hook is not None and hook.group(1) == pinned[0], (
        ".pre-commit-config.yaml and the dev extra disagree"
    )
    installed = ruff("--version").stdout.split()[-1]
    assert installed == pinned[0], (
        f"ruff {installed} is installed, the project pins {pinned[0]}: pip install -e '.[dev]'"
    )
