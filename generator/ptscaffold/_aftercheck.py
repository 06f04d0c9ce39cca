"""After an update: the project's own tests, run by the Python the project is installed in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import _git

# Asked of a candidate interpreter: where it imports the package from, and whether it has pytest
_PROBE = (
    "import importlib.util, sys; s = importlib.util.find_spec(sys.argv[1]); "
    "print(s.origin if s and s.origin else ''); print(bool(importlib.util.find_spec('pytest')))"
)
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
_PYTEST_NO_TESTS = 5


@dataclass(frozen=True)
class SuiteReport:
    ran: bool
    passed: bool = False
    summary: str = ""  # pytest's last line, or why the tests did not run
    failed: list[str] = field(default_factory=list)


def _candidates(project: Path) -> list[Path]:
    """The project's own virtual environment first, then the Python running ptscaffold."""
    return [
        project / ".venv" / "bin" / "python",
        project / ".venv" / "Scripts" / "python.exe",
        Path(sys.executable),
    ]


def project_python(project: Path, package: str) -> tuple[Path | None, str]:
    """An interpreter that imports `package` from this project's `src/` and has pytest, or None
    and the reason."""
    src = (project / "src").resolve()
    reason = f"no Python here imports {package} from {src} (install the project: pip install -e .)"
    for python in _candidates(project):
        if not python.is_file():
            continue
        probe = subprocess.run(
            [str(python), "-c", _PROBE, package], cwd=project, capture_output=True, text=True
        )
        lines = probe.stdout.splitlines()
        if probe.returncode != 0 or len(lines) != 2 or not lines[0]:
            continue
        if not Path(lines[0]).resolve().is_relative_to(src):
            continue
        if lines[1] != "True":
            reason = f"{python} has no pytest (pip install -e '.[dev]')"
            continue
        return python, ""
    return None, reason


def run_project_tests(project: Path, package: str) -> SuiteReport:
    python, reason = project_python(project, package)
    if python is None:
        return SuiteReport(ran=False, summary=reason)
    # Not the variables of a pytest that runs ptscaffold (its worker, its current test), but the
    # user's PYTEST_ADDOPTS, which their own `python -m pytest` would read too
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") or k == "PYTEST_ADDOPTS"
    }
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    last = (proc.stdout.strip().splitlines() or [""])[-1].strip("= ")
    if proc.returncode == _PYTEST_NO_TESTS:
        return SuiteReport(ran=False, summary="the project has no tests")
    return SuiteReport(
        ran=True,
        passed=proc.returncode == 0,
        summary=last,
        failed=sorted(set(_FAILED.findall(proc.stdout))),
    )


def head_commit(project: Path) -> str:
    """The commit the update started from (an update does not commit)."""
    return _git.run("rev-parse", "--short", "HEAD", cwd=project).stdout.strip()
