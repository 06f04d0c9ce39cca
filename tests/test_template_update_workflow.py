"""The generated project's template-update workflow: its script, run for real against a local
git repository (a bare `origin`) and a template that releases a newer version; and every
generated workflow against GitHub's workflow schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ptscaffold
import pytest
import template_matrix as tm
import test_update
import yaml
from ptscaffold_testing import (
    commit_all,
    git,
    isolated,  # noqa: F401
    ptscaffold_cache,  # noqa: F401
)

template_repo = test_update.template_repo

SCRIPT = ".github/scripts/template-update.sh"
WORKFLOW = ".github/workflows/template-update.yml"
CHANGELOG_V1 = "# Changelog\n\n## 1.0.0\n\n- The first release.\n"
CHANGELOG_V2 = (
    "# Changelog\n\n## 2.0.0\n\n- NOTES.md says alpha from v2.\n- ADDED.md is new.\n\n"
    + CHANGELOG_V1.removeprefix("# Changelog\n\n")
)
# The project's tests that the script runs: a file of the user's (the template's own tests are
# run by the tests of the template)
PROJECT_TESTS = "python -m pytest -q -p no:cacheprovider tests/test_notes.py"
USER_TEST = (
    "from pathlib import Path\n\n\ndef test_notes_keep_beta():\n"
    '    assert "beta" in Path("NOTES.md").read_text()\n'
)


@pytest.fixture
def project(tmp_path, template_repo):
    """A project of a git template source at v1.0.0, pushed to a bare `origin`; returns
    (project, origin, release_v2)."""
    repo, release_v2 = template_repo
    (repo / "CHANGELOG.md").write_text(CHANGELOG_V1)
    commit_all(repo, "changelog")
    git(repo, "tag", "-f", "v1.0.0")
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    (project / "tests" / "test_notes.py").write_text(USER_TEST)
    commit_all(project, "a test of the notes")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(project, "remote", "add", "origin", str(origin))
    git(project, "push", "-q", "origin", "HEAD")

    def release() -> None:
        (repo / "CHANGELOG.md").write_text(CHANGELOG_V2)
        release_v2()

    return project, origin, release


def _run_script(project: Path, out: Path, tests: str = PROJECT_TESTS):
    """The project's own script, as the workflow runs it (this interpreter's ptscaffold and
    python first on PATH); returns the process and the outputs it gave the workflow."""
    outputs = out.parent / f"{out.name}.outputs"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "TEST_COMMAND": tests,
        "GITHUB_OUTPUT": str(outputs),
    }
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        ["bash", SCRIPT, str(out)], cwd=project, env=env, capture_output=True, text=True
    )
    found = dict(
        line.split("=", 1) for line in (outputs.read_text() if outputs.exists() else "").split()
    )
    return proc, found


def _at(origin: Path, ref: str, path: str) -> str:
    return git(origin, "show", f"{ref}:{path}")


def test_up_to_date_project_gets_no_branch(tmp_path, project):
    project, origin, _ = project
    head = git(project, "rev-parse", "HEAD")
    proc, outputs = _run_script(project, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert outputs == {"update": "false"}
    assert "nothing to do" in proc.stdout
    assert "template-update" not in git(origin, "branch", "--list")
    assert git(project, "rev-parse", "HEAD") == head
    assert not (tmp_path / "out" / "body.md").exists()


def test_newer_template_makes_a_tested_branch_and_the_pull_request_text(tmp_path, project):
    project, origin, release = project
    (project / "USER.md").write_text("mine\n")
    commit_all(project, "user file")
    git(project, "push", "-q", "origin", "HEAD")
    head = git(project, "rev-parse", "HEAD")
    release()

    proc, outputs = _run_script(project, tmp_path / "out")

    assert proc.returncode == 0, proc.stderr
    branch = "template-update/2.0.0"
    assert outputs == {"update": "true", "branch": branch, "tests": "passed"}, proc.stdout
    # The branch is on origin, one commit on top of the project's, with the update in it
    assert git(origin, "rev-parse", f"{branch}~1") == head
    assert _at(origin, branch, "NOTES.md") == test_update.NOTES_V2
    assert _at(origin, branch, "ADDED.md") == "new in v2\n"
    assert _at(origin, branch, "USER.md") == "mine\n"
    assert yaml.safe_load(_at(origin, branch, ".copier-answers.yml"))["_commit"] == "v2.0.0"
    # The project itself is back where it was, clean
    assert git(project, "rev-parse", "HEAD") == head
    assert git(project, "status", "--porcelain") == ""
    assert (project / "NOTES.md").read_text() == test_update.NOTES_V1
    # The pull request: title, and a body with the CHANGELOG section of 2.0.0 only
    out = tmp_path / "out"
    assert (out / "title.txt").read_text() == "Update to ptscaffold template 2.0.0 (from 1.0.0)\n"
    body = (out / "body.md").read_text()
    assert "### 2.0.0\n\n- NOTES.md says alpha from v2.\n- ADDED.md is new.\n" in body
    assert "1.0.0\n\n- The first release." not in body
    assert "merged without conflicts" in body
    assert f"**Tests** (`{PROJECT_TESTS}`): passed: 1 passed in " in body, body
    assert git(origin, "log", "-1", "--format=%s", branch).strip() == (
        "Update to ptscaffold template 2.0.0 (from 1.0.0)"
    )

    # A week later: the branch (its pull request) is there already; nothing is done again
    again, outputs = _run_script(project, tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert outputs == {"update": "false"} and "already" in again.stdout


def test_conflicted_update_is_committed_with_its_markers_and_listed(tmp_path, project):
    project, origin, release = project
    test_update._user_edits(project)  # edits the line `theta` that v2 changes too
    release()

    proc, outputs = _run_script(project, tmp_path / "out")

    assert proc.returncode == 0, proc.stderr
    assert outputs == {"update": "true", "branch": "template-update/2.0.0", "tests": "not-run"}
    notes = _at(origin, "template-update/2.0.0", "NOTES.md")
    assert "<<<<<<<" in notes and "theta edited by the user" in notes and "theta from v2" in notes
    body = (tmp_path / "out" / "body.md").read_text()
    assert "**Conflicts**" in body and "\n- `NOTES.md`\n" in body
    assert "ADDED.md`" not in body  # merged cleanly: not a conflict
    assert "not run: the update left conflicts" in body
    assert "### 2.0.0" in body
    assert git(project, "status", "--porcelain") == ""


def test_failing_tests_are_reported_and_the_branch_is_still_made(tmp_path, project):
    project, origin, release = project
    # A test of the user's that the template's new NOTES.md breaks
    with (project / "tests" / "test_notes.py").open("a") as tests:
        tests.write(
            "\n\ndef test_notes_start_with_alpha():\n"
            '    assert Path("NOTES.md").read_text().startswith("alpha\\n")\n'
        )
    commit_all(project, "another test of the notes")
    release()

    proc, outputs = _run_script(project, tmp_path / "out")

    assert proc.returncode == 0, proc.stderr
    assert outputs["tests"] == "failed" and outputs["update"] == "true"
    body = (tmp_path / "out" / "body.md").read_text()
    assert "FAILED: 1 failed, 1 passed in " in body, body
    assert git(origin, "rev-parse", "--verify", "template-update/2.0.0").strip()


# --- GitHub's workflow schema ------------------------------------------------------------------


@pytest.mark.parametrize("ci_os", tm.questions()["ci_os"].values)
def test_every_generated_workflow_validates_against_githubs_schema(render_project, ci_os):
    project = render_project(tm.default_answers(tm.all_names(), ci_os=ci_os))
    workflows = sorted((project / ".github" / "workflows").glob("*.yml"))
    assert [w.name for w in workflows] == ["template-update.yml", "tests.yml"]
    # check-jsonschema vendors schemastore's github-workflow schema: no network. Its own
    # require-timeout schema: without timeout-minutes, a hung job holds a runner for six hours
    for schema in ("vendor.github-workflows", "custom.github-workflows-require-timeout"):
        proc = subprocess.run(
            [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema,
             *map(str, workflows)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 0, schema + ": " + proc.stdout + proc.stderr
    # The workflow runs the script the tests above run, and opens the pull request after it
    workflow = yaml.safe_load((project / WORKFLOW).read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["schedule"] and "workflow_dispatch" in triggers
    steps = workflow["jobs"]["update"]["steps"]
    (update,) = [step for step in steps if step.get("id") == "update"]
    assert update["run"].startswith(SCRIPT + " ")
    assert "gh pr create" in steps[steps.index(update) + 1]["run"]
    assert os.access(project / SCRIPT, os.X_OK)
