"""After an update without conflicts, `ptscaffold update` runs the project's own tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import ptscaffold
import pytest
from ptscaffold_testing import (
    commit_all,
    git,
    invoke,
    isolated,  # noqa: F401
    ptscaffold_cache,  # noqa: F401
    tree_state,
)

# A template small enough that its project's suite runs in a second: a package with one
# function and a test of it.
COPIER_YML = """\
_subdirectory: template
_answers_file: .copier-answers.yml
project_name:
  type: str
  default: "{{ _folder_name }}"
package_name:
  type: str
  default: "{{ project_name | lower | replace('-', '_') }}"
"""
FILES = {
    "{{_copier_conf.answers_file}}.jinja": "{{ _copier_answers | to_nice_yaml }}",
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "src/{{package_name}}/__init__.py": "",
    "src/{{package_name}}/calc.py": "def double(x):\n    return 2 * x\n",
    "tests/test_calc.py.jinja": (
        "from {{ package_name }}.calc import double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n"
    ),
}
# v2 tests one more value; a user whose `double` is `x * x` passed v1's test, not v2's
TEST_V2 = (
    "from {{ package_name }}.calc import double\n\n\n"
    "def test_double():\n    assert double(2) == 4\n    assert double(3) == 6\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A project of the small template at v1.0.0, importable by this Python (as after
    `pip install -e .`); calling the returned `release_v2()` tags v2.0.0 of the template."""
    repo = tmp_path / "template"
    (repo / "template").mkdir(parents=True)
    (repo / "copier.yml").write_text(COPIER_YML)
    for name, content in FILES.items():
        path = repo / "template" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git(repo, "init", "-q")
    commit_all(repo, "v1")
    git(repo, "tag", "v1.0.0")
    project = ptscaffold.new(tmp_path / "demo", defaults=True, template=str(repo), quiet=True)
    monkeypatch.setenv("PYTHONPATH", str(project / "src"))

    def release_v2() -> None:
        (repo / "template" / "tests" / "test_calc.py.jinja").write_text(TEST_V2)
        commit_all(repo, "v2")
        git(repo, "tag", "v2.0.0")

    return project, release_v2


def test_an_update_that_breaks_a_test_says_which_and_how_to_go_back(project):
    project, release_v2 = project
    calc = project / "src" / "demo" / "calc.py"
    calc.write_text("def double(x):\n    return x * x\n")  # the user's edit: 2 * 2 == 2 ** 2
    commit_all(project, "the user's double")
    before = tree_state(project)
    release_v2()

    result = invoke("update", str(project), "--trust")

    assert result.exit_code == 5, result.stderr
    assert "Running the project's tests" in result.stdout
    assert "1 failed" in result.stderr
    assert "  tests/test_calc.py::test_double" in result.stderr.splitlines()
    assert "assert double(3) == 6" in (project / "tests" / "test_calc.py").read_text()  # in place
    back = result.stderr.split("To go back to the commit before it: ")[1].strip()
    head = git(project, "rev-parse", "--short", "HEAD").strip()
    assert back == f"git reset --hard {head} && git clean -fd"
    subprocess.run(back, shell=True, cwd=project, check=True, capture_output=True)
    assert tree_state(project) == before


def test_an_update_whose_tests_pass_says_so(project):
    project, release_v2 = project
    release_v2()
    result = invoke("update", str(project), "--trust")
    assert result.exit_code == 0, result.stderr
    assert "The project's tests pass: 1 passed" in result.stdout


def test_no_test_skips_the_tests(project):
    project, release_v2 = project
    (project / "src" / "demo" / "calc.py").write_text("def double(x):\n    return x * x\n")
    commit_all(project, "the user's double")
    release_v2()
    result = invoke("update", str(project), "--trust", "--no-test")
    assert result.exit_code == 0, result.stderr
    assert "Running the project's tests" not in result.stdout


def test_a_project_no_python_here_imports_is_not_tested(project, monkeypatch):
    project, release_v2 = project
    monkeypatch.delenv("PYTHONPATH")
    release_v2()
    result = invoke("update", str(project), "--trust")
    assert result.exit_code == 0, result.stderr
    assert "Tests not run: no Python here imports demo" in result.stderr


def test_an_untrusted_template_s_tests_do_not_run(project, tmp_path):
    """Tests the update brought from a template nobody trusted are its code: they do not run."""
    project, release_v2 = project
    marker = tmp_path / "ran"
    release_v2()
    hostile = project.parent / "template" / "template" / "tests" / "test_hostile.py"
    hostile.write_text(f"open({str(marker)!r}, 'w').close()\n\n\ndef test_x():\n    pass\n")
    commit_all(project.parent / "template", "v2 with a test that touches a marker")
    git(project.parent / "template", "tag", "-f", "v2.0.0")
    result = invoke("update", str(project))
    assert result.exit_code == 0, result.stderr
    assert (project / "tests" / "test_hostile.py").is_file()
    assert not marker.exists(), "the untrusted template's test ran"
    assert "Tests not run: they hold code from a template nobody trusted" in result.stderr
