"""ptscaffold on the lowest copier its pin allows (the rest of the suite runs on the highest).

ptscaffold reads copier's private modules, so the range in pyproject.toml is the range tested:
this test installs the lowest copier into a virtual environment of its own (it needs the
package registry) and runs new, update --dry-run and update there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import test_update
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from ptscaffold_testing import REPO_ROOT, commit_all
from test_update import NOTES_V1, NOTES_V2

# The update tests' git template source at v1.0.0 (`release_v2()` tags v2.0.0)
template_repo = test_update.template_repo
USER_EDIT = ("delta", "delta edited by the user")  # a line v2 leaves alone: a clean merge


def _copier_range() -> SpecifierSet:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    spec = next(d for d in project["dependencies"] if re.match(r"copier\b", d))
    return SpecifierSet(spec.removeprefix("copier"))


def test_the_pin_has_an_upper_bound_and_the_suite_runs_the_highest():
    """The next copier minor is not allowed until it is tested; this suite's copier is in range."""
    allowed = _copier_range()
    assert any(s.operator == "<" for s in allowed), allowed
    assert Version(version("copier")) in allowed


def _lowest() -> str:
    return next(s.version for s in _copier_range() if s.operator == ">=")


@pytest.mark.slow
def test_new_and_update_work_on_the_lowest_copier(tmp_path: Path, template_repo):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"copier=={_lowest()}"],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT / "generator"),
        "PTSCAFFOLD_CACHE_DIR": str(tmp_path / "cache"),
        "COPIER_CACHE_DIR": str(tmp_path / "copier-cache"),
    }

    def ptscaffold(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-m", "ptscaffold", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )

    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('copier'))"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert Version(probe.stdout.strip()) == Version(_lowest())

    # new, from the bundled template (the offline cache)
    made = ptscaffold("new", "bundled", "--defaults", "-q")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "bundled" / "src" / "bundled" / "train.py").is_file()

    # update, from a git template source: preview, then the merge of a user edit
    repo, release_v2 = template_repo
    made = ptscaffold("new", "proj", "--defaults", "-q", "--template", str(repo))
    assert made.returncode == 0, made.stderr
    project = tmp_path / "proj"
    notes = project / "NOTES.md"
    notes.write_text(NOTES_V1.replace(*USER_EDIT))
    commit_all(project, "user edit")
    release_v2()

    preview = ptscaffold("update", str(project), "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert "modified  NOTES.md" in preview.stdout
    assert notes.read_text() == NOTES_V1.replace(*USER_EDIT)

    updated = ptscaffold("update", str(project), "--no-test")
    assert updated.returncode == 0, updated.stderr
    assert notes.read_text() == NOTES_V2.replace(*USER_EDIT)
