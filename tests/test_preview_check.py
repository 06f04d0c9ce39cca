"""`update --dry-run` shows an update without writing it; `check` tells when one is due."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import ptscaffold
import pytest
import test_update
from ptscaffold_testing import (
    commit_all,
    git,
    invoke,
    isolated,  # noqa: F401
    ptscaffold_cache,  # noqa: F401
    tree_state,
)
from test_update import _user_edits

# The update tests' two-version templates: bundled with ptscaffold, and a git repository
bundled = test_update.bundled
template_repo = test_update.template_repo


def _repository_state(project: Path) -> dict[str, str]:
    """The working tree, HEAD, index and status (tree_state), every ref, and the bytes of
    every file in .git (the index's included: a `git status` may rewrite it)."""
    state = tree_state(project)
    state["<refs>"] = git(project, "for-each-ref")
    for path in sorted((project / ".git").rglob("*")):
        if path.is_file():
            state[f"<git>/{path.relative_to(project / '.git')}"] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return state


def _ignored_user_file(project: Path, name: str) -> None:
    """A file of the user's that git ignores, where the next template version adds one."""
    (project / name).write_text("the user's own\n")
    with (project / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write(f"/{name}\n")


def test_dry_run_lists_the_changes_and_conflicts_and_writes_nothing(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    _user_edits(project)
    _ignored_user_file(project, "ADDED.md")
    bundled("2.0.0")
    before = _repository_state(project)

    shown = invoke("update", str(project), "--dry-run")

    assert _repository_state(project) == before
    assert shown.exit_code == 3, shown.stderr  # it would leave conflicts
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"Updating {project} from 1.0.0 to 2.0.0 would change")
    assert any(line.split()[:2] == ["modified", "NOTES.md"] for line in lines), shown.stdout
    assert any(line.split()[:2] == ["added", "ADDED.md"] for line in lines), shown.stdout
    assert "USER.md" not in shown.stdout  # the user's own file: the update leaves it alone
    assert shown.stderr.split()[-2:] == ["ADDED.md.ptscaffold-new", "NOTES.md"]

    # ...and the update itself leaves exactly the conflicts the preview named
    done = invoke("update", str(project))
    assert done.exit_code == 3
    assert done.stderr.split("conflicts in:")[1].split()[:2] == [
        "ADDED.md.ptscaffold-new",
        "NOTES.md",
    ]


def test_dry_run_of_a_clean_merge_exits_0(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    (project / "USER.md").write_text("mine\n")
    commit_all(project, "user file")
    bundled("2.0.0")
    shown = invoke("update", str(project), "--dry-run")
    assert shown.exit_code == 0, shown.stderr
    assert "Nothing was written" in shown.stdout
    assert (project / "NOTES.md").read_text().startswith("alpha\n")  # still v1


def test_dry_run_on_the_newest_version_says_nothing_changes(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    shown = invoke("update", str(project), "--dry-run")
    assert shown.exit_code == 0, shown.stderr
    assert "an update changes nothing" in shown.stdout


def test_dry_run_starts_from_uncommitted_changes_as_they_are(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    bundled("2.0.0")
    clean = invoke("update", str(project), "--dry-run")
    assert clean.exit_code == 0, clean.stderr  # from HEAD, v2 merges cleanly
    assert not clean.stdout.startswith("From the working tree")

    notes = project / "NOTES.md"  # v2 changes its `theta` line too: a conflict, once committed
    notes.write_text(notes.read_text().replace("theta", "theta edited, not committed"))
    (project / "scratch.txt").write_text("untracked\n")
    before = _repository_state(project)
    shown = invoke("update", str(project), "--dry-run")

    assert _repository_state(project) == before
    assert shown.exit_code == 3, shown.stderr
    assert shown.stdout.splitlines()[0] == (
        "From the working tree as it is: its 2 uncommitted or untracked files count as committed "
        "(the update itself needs them committed or stashed)."
    )
    assert shown.stderr.split()[-1] == "NOTES.md"  # the conflict it would leave

    # ...and the update itself refuses them, by name
    refused = invoke("update", str(project))
    assert refused.exit_code == 1
    assert "uncommitted changes or untracked files (NOTES.md, scratch.txt)" in refused.stderr
    assert _repository_state(project) == before


def test_check_tells_when_an_update_is_due(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    current = invoke("check", str(project))
    assert current.exit_code == 0, current.stderr
    assert "newest template, 1.0.0" in current.stdout

    bundled("2.0.0")  # ptscaffold upgraded
    due = invoke("check", str(project), "--json")
    assert due.exit_code == 4, due.stderr
    assert json.loads(due.stdout) == {
        "project": str(project),
        "version": "1.0.0",
        "latest": "2.0.0",
        "update_available": True,
    }

    assert invoke("update", str(project)).exit_code == 0
    commit_all(project, "update")
    assert invoke("check", str(project)).exit_code == 0


CHANGELOG = """# Changelog

Text before the first section.

## Unreleased

- After 2.0.0.

## [2.0.0] - 2026-01-05

- NOTES.md changes.

## v1.0.0

- The project's own version: already in it.

## Notes on versions

## 0.9.0

- Older still.
"""


def test_check_prints_the_changelog_sections_an_update_brings(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    # The bundled template's CHANGELOG.md sits beside its copier.yml (the wheel puts it there)
    (tmp_path / "t2" / "CHANGELOG.md").write_text(CHANGELOG)
    current = invoke("check", str(project), "--changelog")
    assert (current.exit_code, current.stdout) == (0, ""), current.stderr

    bundled("2.0.0")
    due = invoke("check", str(project), "--changelog")
    assert due.exit_code == 4, due.stderr
    assert due.stdout == (
        "## Unreleased\n\n- After 2.0.0.\n\n## [2.0.0] - 2026-01-05\n\n- NOTES.md changes.\n"
    )
    found = json.loads(invoke("check", str(project), "--json", "--changelog").stdout)
    assert found["changelog"] == due.stdout and found["update_available"] is True


def test_check_refuses_a_project_of_a_newer_ptscaffold(tmp_path, bundled):
    bundled("2.0.0")
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    bundled("1.0.0")
    refused = invoke("check", str(project))
    assert refused.exit_code == 1
    assert "newer than the installed 1.0.0" in refused.stderr


def test_check_reads_the_versions_of_another_template_source(tmp_path, template_repo):
    repo, release_v2 = template_repo
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    assert invoke("check", str(project)).exit_code == 0
    release_v2()
    due = invoke("check", str(project))
    assert due.exit_code == 4, due.stderr
    assert "2.0.0 is available" in due.stdout


@pytest.mark.parametrize("where", ["missing", "not-generated"])
def test_check_refuses_what_is_not_a_generated_project(tmp_path, where):
    folder = tmp_path / "folder"
    if where == "not-generated":
        folder.mkdir()
    refused = invoke("check", str(folder))
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: ")
