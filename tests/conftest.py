"""Session fixtures for the tests that render the template and run what it generates.

- `template_snapshot`: one copy of this checkout's template (copier.yml, template/, hooks/) per
  test run. Every render of the run comes from it, so a template edited while the tests run
  cannot give two renders of one run different templates.
- `render_project(answers) -> Path`: the project for `answers`, rendered once per distinct
  answers (`--defaults --no-git`, into a folder named `demo`). Treat it as read-only: every
  test asking for those answers gets the same folder.
- `run_generated_tests(project, *pytest_args) -> CompletedProcess`: the project's own suite in
  a subprocess of this interpreter (`python -m pytest -q -p no:cacheprovider`, stdout and
  stderr together in `stdout`). Run once per project and arguments; later calls get the
  recorded result.

Under pytest-xdist these live in a folder shared by the workers of one run, each guarded by a
file lock: whichever worker asks first does the work, the others wait for it and reuse it.

Option `--all-combinations` (off by default) is the release check: the generated suite of every
combination of the template's flags (see test_template_projects.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import template_matrix
from filelock import FileLock
from ptscaffold_testing import copy_template

# A generated suite running longer than this fails (a hung distributed test, say).
SUITE_TIMEOUT_S = 900


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all-combinations",
        action="store_true",
        default=False,
        help="release check: run the generated test suite of every combination of the "
        "template's flags (hours; see tests/test_template_projects.py)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first. Under xdist the run ends when its last test does: the generated suites
    (minutes each) must start before the tests of seconds, which then fill the gaps (with
    `--dist worksteal`, see pyproject.toml, an idle worker takes tests queued for another)."""
    items.sort(key=_expected_cost, reverse=True)  # stable: the rest keep their order


def _expected_cost(item: pytest.Item) -> int:
    if item.get_closest_marker("slow") is None:
        return 0
    params = getattr(item, "callspec", None)
    answers = params.params.get("answers") if params else None
    return template_matrix.suite_cost(answers) if isinstance(answers, dict) else 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = [
        f"{value} ({report.nodeid.split('::', 1)[-1]})"
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == template_matrix.TIMING
    ]
    if lines:
        terminalreporter.write_sep("-", "ptscaffold template timings")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test run, shared by all xdist workers of the run."""
    base = tmp_path_factory.getbasetemp()
    # With xdist, basetemp is `pytest-N/popen-gwK` and its parent belongs to this run alone.
    # Without xdist, basetemp is `pytest-N` itself (its parent holds earlier runs too).
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "template-session"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def template_snapshot(session_root: Path) -> Path:
    """This checkout's template, copied once per run; renders pass it as `template=`.

    A plain folder: copier reads it in place instead of cloning the bundled template's git
    cache for every project (a third of a render). The files rendered are the same but for
    `_src_path` and `_commit` in .copier-answers.yml.
    """
    snapshot = session_root / "template"
    with FileLock(str(session_root / "template.lock")):
        if not (snapshot / "copier.yml").is_file():
            staging = session_root / "template.partial"
            shutil.rmtree(staging, ignore_errors=True)
            copy_template(staging)
            os.replace(staging, snapshot)
    return snapshot


@pytest.fixture(scope="session")
def isolation_env(session_root: Path) -> dict[str, str]:
    """Private ptscaffold/copier caches, empty HOME and git config, no copier user settings."""
    return template_matrix.isolation_env(session_root / "isolated")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.fixture(scope="session")
def render_project(
    session_root: Path, template_snapshot: Path, isolation_env: dict[str, str]
) -> Callable[[Mapping[str, Any]], Path]:
    """`render_project(answers) -> Path`: render once per distinct answers, then reuse."""
    renders = session_root / "projects"
    renders.mkdir(exist_ok=True)

    def render(answers: Mapping[str, Any]) -> Path:
        folder = renders / _digest(template_matrix.key(answers))
        project = folder / template_matrix.PROJECT_FOLDER
        with FileLock(f"{folder}.lock"):
            if not project.is_dir():
                folder.mkdir(exist_ok=True)
                (folder / "answers.json").write_text(template_matrix.key(answers))
                with template_matrix.environ(isolation_env):
                    # ptscaffold.new renders beside `project` and moves it in at the end.
                    template_matrix.render(project, answers, template_snapshot)
        return project

    return render


@pytest.fixture(scope="session")
def run_generated_tests(session_root: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_generated_tests(project, *pytest_args) -> CompletedProcess`, run once per run.

    The environment is this process's, minus pytest's own variables (they would leak into the
    project's pytest), with one torch.compile cache (TORCHINDUCTOR_CACHE_DIR) for every
    generated suite of the run, and no bytecode written into the shared projects. The result
    carries the seconds the suite took as `elapsed`.
    """
    results = session_root / "suite-results"
    results.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_CORE_"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(session_root / "torchinductor")
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
        record = results / f"{_digest(json.dumps([str(project), *args]))}.json"
        with FileLock(f"{record}.lock"):
            if record.is_file():
                data = json.loads(record.read_text())
            else:
                start = time.perf_counter()
                # --durations: the slowest generated tests, for whoever shortens the suite next
                command = ["--durations=8", *args]
                proc = template_matrix.run_suite(project, command, env, SUITE_TIMEOUT_S)
                data = {
                    "args": proc.args,
                    "returncode": proc.returncode,
                    "stdout": proc.stdout,
                    "elapsed": round(time.perf_counter() - start, 1),
                }
                record.write_text(json.dumps(data))
        proc = subprocess.CompletedProcess(data["args"], data["returncode"], data["stdout"], "")
        proc.elapsed = data["elapsed"]  # type: ignore[attr-defined]
        return proc

    return run
