"""`ptscaffold update`: offline, keeps user edits, marks overlaps, refuses without touching."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import ptscaffold
import pytest
import yaml
from ptscaffold import UpdateRefused, _template
from ptscaffold_testing import (
    REPO_ROOT,
    build_wheel,
    commit_all,
    copy_template,
    git,
    invoke,
    isolated,  # noqa: F401
    ptscaffold_cache,  # noqa: F401
    set_version,
    source_copy,
    tree_state,
)

NOTES_V1 = "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\n"
# v2 changes `alpha` (the user does not touch it) and `theta` (the user edits it too).
NOTES_V2 = "alpha from v2\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta from v2\n"


def _template_version(root: Path, version: str, notes: str, added: bool) -> Path:
    copy_template(root)
    set_version(root, version)
    (root / "template" / "NOTES.md").write_text(notes)
    if added:
        (root / "template" / "ADDED.md").write_text("new in v2\n")
    return root


@pytest.fixture
def bundled(monkeypatch, tmp_path):
    """Switch the 'installed' template between two versions, as upgrading ptscaffold would."""
    roots = {
        "1.0.0": _template_version(tmp_path / "t1", "1.0.0", NOTES_V1, added=False),
        "2.0.0": _template_version(tmp_path / "t2", "2.0.0", NOTES_V2, added=True),
    }

    def install(version: str) -> None:
        monkeypatch.setattr(_template, "template_root", lambda: roots[version])

    install("1.0.0")
    return install


@pytest.fixture
def template_repo(tmp_path):
    """A git repository of the template tagged v1.0.0; calling `.release_v2()` tags v2.0.0."""
    repo = _template_version(tmp_path / "tpl-repo", "1.0.0", NOTES_V1, added=False)
    git(repo, "init", "-q")
    commit_all(repo, "v1")
    git(repo, "tag", "v1.0.0")

    def release_v2() -> None:
        set_version(repo, "2.0.0")
        (repo / "template" / "NOTES.md").write_text(NOTES_V2)
        (repo / "template" / "ADDED.md").write_text("new in v2\n")
        commit_all(repo, "v2")
        git(repo, "tag", "v2.0.0")

    return repo, release_v2


def _user_edits(project: Path) -> None:
    notes = project / "NOTES.md"
    notes.write_text(notes.read_text().replace("theta", "theta edited by the user"))
    (project / "USER.md").write_text("mine\n")
    commit_all(project, "user edits")


def _check_merged(project: Path, result) -> None:
    assert result.exit_code == 3, result.stderr
    assert "NOTES.md" in result.stderr
    notes = (project / "NOTES.md").read_text()
    assert notes.startswith("alpha from v2\n")  # untouched line updated
    assert "<<<<<<<" in notes and ">>>>>>>" in notes  # overlapping edit marked
    assert "theta edited by the user" in notes and "theta from v2" in notes
    assert (project / "ADDED.md").read_text() == "new in v2\n"
    assert (project / "USER.md").read_text() == "mine\n"
    assert git(project, "diff", "--name-only", "--diff-filter=U").split() == ["NOTES.md"]


def test_update_bundled_template_merges_and_reports_conflicts(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    assert yaml.safe_load((project / ".copier-answers.yml").read_text())["_commit"] == "v1.0.0"
    _user_edits(project)
    bundled("2.0.0")
    result = invoke("update", str(project))
    _check_merged(project, result)
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["_commit"] == "v2.0.0"
    assert answers["_src_path"] == _template.CANONICAL_URL


def test_update_with_rej_files(tmp_path, bundled):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    _user_edits(project)
    bundled("2.0.0")
    result = invoke("update", str(project), "--conflict", "rej")
    assert result.exit_code == 3, result.stderr
    assert "NOTES.md.rej" in result.stderr
    # Copier applies the user's diff onto the new render: the hunk it cannot place is the user's.
    assert (project / "NOTES.md").read_text().startswith("alpha from v2\n")
    assert "theta edited by the user" in (project / "NOTES.md.rej").read_text()
    assert (project / "USER.md").read_text() == "mine\n"


def test_update_from_a_git_template_source(tmp_path, template_repo):
    repo, release_v2 = template_repo
    project = tmp_path / "proj"
    result = invoke("new", str(project), "--defaults", "--template", str(repo), "--data", "_x=1")
    assert result.exit_code == 2  # `_x` is not a question of that template either
    project = ptscaffold.new(project, defaults=True, template=str(repo), quiet=True)
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["_src_path"] == str(repo)  # absolute, so `copier update` works too
    assert answers["_commit"] == "v1.0.0"
    _user_edits(project)
    release_v2()
    _check_merged(project, invoke("update", str(project)))


# --- a template file that moves ---------------------------------------------------------------

# The `_migrations` entry copier.yml documents for a moved file (hooks/move_file.py).
MOVE_MIGRATION = """_migrations:
  - version: "2.0.0"
    command: ["{{ _copier_python }}", "{{ _copier_conf.src_path }}/hooks/move_file.py",
              NOTES.md, docs/NOTES.md]
"""


def _release_moved(root: Path, notes: str, migration: bool) -> Path:
    """Template v2.0.0 at `root`: NOTES.md moved to docs/NOTES.md (content `notes`)."""
    if not (root / "copier.yml").exists():
        copy_template(root)
    set_version(root, "2.0.0")
    (root / "template" / "NOTES.md").unlink(missing_ok=True)
    (root / "template" / "docs").mkdir(exist_ok=True)
    (root / "template" / "docs" / "NOTES.md").write_text(notes)
    if migration:
        _set_migrations(root, MOVE_MIGRATION)
    return root


def _set_migrations(root: Path, migrations: str) -> None:
    """Put `migrations` in place of the `_migrations: []` of the copied copier.yml."""
    config = root / "copier.yml"
    text, count = re.subn(r"(?m)^_migrations: \[\]\n", migrations, config.read_text())
    assert count == 1, "`_migrations: []` not found in copier.yml"
    config.write_text(text)


# v2 changes `alpha` only: with the user's `theta` edit the merge is clean.
NOTES_MOVED = NOTES_V1.replace("alpha", "alpha from v2")


@pytest.mark.parametrize("migration", [True, False], ids=["migration", "no-migration"])
def test_moved_file_keeps_the_users_edits(tmp_path, monkeypatch, migration):
    roots = {"1.0.0": _template_version(tmp_path / "t1", "1.0.0", NOTES_V1, added=False)}
    roots["2.0.0"] = _release_moved(tmp_path / "t2", NOTES_MOVED, migration)
    monkeypatch.setattr(_template, "template_root", lambda: roots["1.0.0"])
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    _user_edits(project)
    monkeypatch.setattr(_template, "template_root", lambda: roots["2.0.0"])
    result = invoke("update", str(project))
    assert result.exit_code == 0, result.stderr
    assert not (project / "NOTES.md").exists()
    assert git(project, "diff", "--name-only", "--diff-filter=U") == ""
    moved = (project / "docs" / "NOTES.md").read_text()
    if migration:  # the template's change and the user's edit, merged at the new path
        assert moved == NOTES_MOVED.replace("theta", "theta edited by the user")
    else:  # why the migration exists: copier drops the edited file and writes a fresh one
        assert moved == NOTES_MOVED
    assert (project / "USER.md").read_text() == "mine\n"


def test_moved_file_overlapping_edit_is_a_conflict(tmp_path, template_repo):
    repo, _ = template_repo
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    _user_edits(project)
    _release_moved(repo, NOTES_V2, migration=True)  # v2 also changes the user's `theta` line
    commit_all(repo, "v2")
    git(repo, "tag", "v2.0.0")
    result = invoke("update", str(project), "--trust")
    assert result.exit_code == 3, result.stderr
    assert "docs/NOTES.md" in result.stderr
    moved = (project / "docs" / "NOTES.md").read_text()
    assert moved.startswith("alpha from v2\n")
    assert "theta edited by the user" in moved and "theta from v2" in moved and "<<<<<<<" in moved
    assert git(project, "diff", "--name-only", "--diff-filter=U").split() == ["docs/NOTES.md"]
    assert not (project / "NOTES.md").exists()


def test_moved_file_with_plain_copier_update(tmp_path, template_repo):
    repo, _ = template_repo
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    _user_edits(project)
    _release_moved(repo, NOTES_MOVED, migration=True)
    commit_all(repo, "v2")
    git(repo, "tag", "v2.0.0")
    proc = subprocess.run(
        [sys.executable, "-m", "copier", "update", "--trust", "--defaults", "--quiet"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (project / "NOTES.md").exists()
    assert (project / "docs" / "NOTES.md").read_text() == NOTES_MOVED.replace(
        "theta", "theta edited by the user"
    )
    assert git(project, "diff", "--name-only", "--diff-filter=U") == ""


# One migration moves several files: OLD NEW pairs, the previous version rendered once for all.
OTHER_V1 = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
OTHER_MOVED = OTHER_V1.replace("seven", "seven from v2")
# NOTES.md and OTHER.md move into docs/; docs/GONE.md is not rendered (the pair is skipped);
# v1 rendered no MINE.md, so a MINE.md of the user's is left alone beside v2's docs/MINE.md.
MOVES_MIGRATION = """_migrations:
  - version: "2.0.0"
    command: ["{{ _copier_python }}", "{{ _copier_conf.src_path }}/hooks/move_file.py",
              NOTES.md, docs/NOTES.md, GONE.md, docs/GONE.md, OTHER.md, docs/OTHER.md,
              MINE.md, docs/MINE.md]
"""
MOVES = ["NOTES.md", "docs/NOTES.md", "OTHER.md", "docs/OTHER.md", "MINE.md", "docs/MINE.md"]


def _template_repo_with_other(root: Path) -> Path:
    """The template at v1.0.0 (a git repository), rendering OTHER.md beside NOTES.md."""
    repo = _template_version(root, "1.0.0", NOTES_V1, added=False)
    (repo / "template" / "OTHER.md").write_text(OTHER_V1)
    git(repo, "init", "-q")
    commit_all(repo, "v1")
    git(repo, "tag", "v1.0.0")
    return repo


def _release_moves(repo: Path) -> None:
    """v2.0.0 of `repo`: one migration moves NOTES.md and OTHER.md into docs/."""
    _release_moved(repo, NOTES_MOVED, migration=False)
    (repo / "template" / "OTHER.md").unlink()
    (repo / "template" / "docs" / "OTHER.md").write_text(OTHER_MOVED)
    (repo / "template" / "docs" / "MINE.md").write_text("the template's MINE.md\n")
    _set_migrations(repo, MOVES_MIGRATION)
    commit_all(repo, "v2")
    git(repo, "tag", "v2.0.0")


def _edit_other_files(project: Path) -> None:
    """The user's edits: NOTES.md and OTHER.md, and a MINE.md of their own."""
    other = project / "OTHER.md"
    other.write_text(other.read_text().replace("two", "two edited by the user"))
    (project / "MINE.md").write_text("mine\n")
    _user_edits(project)  # NOTES.md, then commits


def _check_moved_with_edits(project: Path) -> None:
    assert not (project / "NOTES.md").exists() and not (project / "OTHER.md").exists()
    notes, other = (project / "docs" / "NOTES.md"), (project / "docs" / "OTHER.md")
    assert notes.read_text() == NOTES_MOVED.replace("theta", "theta edited by the user")
    assert other.read_text() == OTHER_MOVED.replace("two", "two edited by the user")
    assert (project / "MINE.md").read_text() == "mine\n"
    assert git(project, "diff", "--name-only", "--diff-filter=U") == ""


@pytest.mark.parametrize("conflict", ["inline", "rej"])
def test_one_migration_moves_several_files(tmp_path, conflict):
    repo = _template_repo_with_other(tmp_path / "tpl-repo")
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    _edit_other_files(project)
    _release_moves(repo)
    result = invoke("update", str(project), "--trust", "--conflict", conflict)
    assert result.exit_code == 0, result.stderr + result.stdout
    _check_moved_with_edits(project)
    assert not list(project.rglob("*.rej")), "the carried edits are no rejected hunks"
    assert (project / "docs" / "MINE.md").read_text() == "the template's MINE.md\n"
    assert not (project / "docs" / "GONE.md").exists()


def _load_hook(path: Path):
    spec = importlib.util.spec_from_file_location("move_file_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_moved_files_render_the_previous_version_once(tmp_path, monkeypatch):
    """What copier leaves before its `after` migrations (OLD gone, a fresh NEW), then the
    migration in-process, counting copier's renders."""
    import copier

    repo = _template_repo_with_other(tmp_path / "tpl-repo")
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    _edit_other_files(project)
    for name in ("NOTES.md", "OTHER.md"):
        (project / name).unlink()
    (project / "docs").mkdir()
    (project / "docs" / "NOTES.md").write_text(NOTES_MOVED)
    (project / "docs" / "OTHER.md").write_text(OTHER_MOVED)
    renders = []
    render = copier.run_copy
    monkeypatch.setattr(copier, "run_copy", lambda *a, **k: renders.append(a) or render(*a, **k))
    monkeypatch.delenv("VERSION_FROM", raising=False)  # the answers file's _commit, then
    monkeypatch.chdir(project)
    hook = _load_hook(repo / "hooks" / "move_file.py")
    assert hook.main(*hook.parse_args(MOVES)) == 0
    assert len(renders) == 1
    _check_moved_with_edits(project)


def test_move_file_usage(tmp_path):
    hook = REPO_ROOT / "hooks" / "move_file.py"
    proc = subprocess.run([sys.executable, str(hook), "only-one"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "usage: move_file.py OLD_PATH NEW_PATH [OLD_PATH NEW_PATH ...] [ANSWERS_FILE]"
    )
    parse = _load_hook(hook).parse_args
    assert parse(["a", "b", "c", "d"]) == ([("a", "b"), ("c", "d")], ".copier-answers.yml")
    assert parse(["a", "b", "answers.yml"]) == ([("a", "b")], "answers.yml")


def _strip_git(state: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in state.items() if not k.startswith("<")}


@pytest.mark.parametrize(
    ("flag", "on", "off"),
    [("amp", "bf16", "none"), ("nan_guard", "false", "true"), ("timm", "true", "false")],
)
def test_toggling_a_feature_equals_a_fresh_generation(tmp_path, flag, on, off):
    project = ptscaffold.new(tmp_path / "a" / "proj", defaults=True, quiet=True)
    (project / "USER.md").write_text("mine\n")
    commit_all(project, "user file")
    fresh_off = _strip_git(tree_state(project))

    result = invoke("update", str(project), "--data", f"{flag}={on}")
    assert result.exit_code == 0, result.stderr
    fresh_on = ptscaffold.new(tmp_path / "b" / "proj", data={flag: on}, defaults=True, quiet=True)
    expected = _strip_git(tree_state(fresh_on))
    expected["USER.md"] = fresh_off["USER.md"]
    assert _strip_git(tree_state(project)) == expected
    assert expected != fresh_off  # the flag changes generated code

    commit_all(project, f"{flag} on")
    result = invoke("update", str(project), "--data", f"{flag}={off}")
    assert result.exit_code == 0, result.stderr
    assert _strip_git(tree_state(project)) == fresh_off


# --- refusals: one line, exit 1, nothing touched ----------------------------------------------


@pytest.fixture
def project(tmp_path) -> Path:
    return ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)


def _refused(project: Path, *args: str, needle: str) -> None:
    before = tree_state(project)
    result = invoke("update", str(project), *args)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert needle in result.stderr
    assert tree_state(project) == before


def _rewrite_answers(project: Path, **changes) -> None:
    path = project / ".copier-answers.yml"
    answers = yaml.safe_load(path.read_text())
    answers.update(changes)
    answers = {k: v for k, v in answers.items() if v is not None}
    path.write_text(yaml.safe_dump(answers))
    commit_all(project, "edit answers")


def test_refuses_a_folder_that_is_not_a_repository(tmp_path):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, git=False, quiet=True)
    _refused(project, needle="not a git repository")


def test_refuses_uncommitted_changes_naming_them(project):
    (project / ".gitignore").write_text("changed\n")
    _refused(project, needle="uncommitted changes or untracked files (.gitignore); commit or stash")


def test_refuses_untracked_files_naming_a_few(project):
    for name in "abcdefg":
        (project / f"scratch-{name}.txt").write_text("x\n")
    named = ", ".join(f"scratch-{name}.txt" for name in "abcde")
    _refused(project, needle=f"({named} and 2 more); commit or stash")


def test_refuses_without_answers_file(project):
    git(project, "rm", "-q", ".copier-answers.yml")
    commit_all(project, "drop answers")
    _refused(project, needle="no .copier-answers.yml")


def test_refuses_answers_from_another_template(project):
    path = project / ".copier-answers.yml"
    path.write_text(yaml.safe_dump({"_src_path": "gh:someone/else", "_commit": "v1", "x": 1}))
    commit_all(project, "other template")
    _refused(project, needle="another template")


def test_refuses_a_project_from_a_newer_ptscaffold(project):
    _rewrite_answers(project, _commit="v99.0.0")
    _refused(project, needle="newer than the installed")


def test_refuses_a_version_not_available_offline(project, tmp_path, monkeypatch):
    # A cache of its own: another test of this process may have tagged v0.0.1 in the shared one
    monkeypatch.setenv("PTSCAFFOLD_CACHE_DIR", str(tmp_path / "own-cache"))
    _rewrite_answers(project, _commit="v0.0.1")
    _refused(project, needle="not available offline")


def test_unreachable_source_is_explained(project):
    from plumbum import local

    _rewrite_answers(project, _src_path="https://example.invalid/template.git")
    # GIT_ALLOW_PROTOCOL=file: git refuses https, exactly as if there were no network.
    with local.env(GIT_ALLOW_PROTOCOL="file"):
        _refused(project, needle="git failed while reading the template")


def test_bad_answer_on_update_touches_nothing(project):
    before = tree_state(project)
    result = invoke("update", str(project), "--data", "amp=fp8")
    assert result.exit_code == 2 and "choose one of" in result.stderr
    assert tree_state(project) == before


def test_api_refusal_type(tmp_path):
    with pytest.raises(UpdateRefused):
        ptscaffold.update(tmp_path)


# --- an installed wheel, no checkout, no network ----------------------------------------------


@pytest.mark.slow
def test_installed_wheel_updates_offline(tmp_path):
    # Without the releases bundle: these two made-up versions are the only ones
    old_src = source_copy(tmp_path / "src-old", releases=False)
    new_src = source_copy(tmp_path / "src-new", releases=False)
    set_version(new_src, "99.0.0")
    (new_src / "template" / "RELEASE-NOTE.txt").write_text("arrived with 99.0.0\n")
    old_wheel = build_wheel(old_src, tmp_path / "dist-old")
    new_wheel = build_wheel(new_src, tmp_path / "dist-new")
    shutil.rmtree(old_src)
    shutil.rmtree(new_src)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    pip = [str(bindir / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(old_wheel)], check=True)

    work = tmp_path / "work"  # outside any checkout of this repository
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PTSCAFFOLD_CACHE_DIR"] = str(tmp_path / "user-cache")
    env["COPIER_CACHE_DIR"] = str(tmp_path / "copier-cache")
    code = "import ptscaffold._template as t; print(t.template_root())"
    where = subprocess.run(
        [str(bindir / "python"), "-c", code], cwd=work, env=env, capture_output=True, text=True
    ).stdout.strip()
    assert where.startswith(str(venv)), where

    ptscaffold_cmd = str(bindir / "ptscaffold")
    run = dict(cwd=work, env=env, capture_output=True, text=True)
    made = subprocess.run([ptscaffold_cmd, "new", "proj", "--defaults"], **run)
    assert made.returncode == 0, made.stderr
    project = work / "proj"
    assert git(project, "rev-list", "--count", "HEAD").strip() == "1"

    subprocess.run([*pip, "--force-reinstall", str(new_wheel)], check=True)
    version = subprocess.run([ptscaffold_cmd, "--version"], **run)
    assert version.stdout.strip() == "ptscaffold 99.0.0"
    updated = subprocess.run([ptscaffold_cmd, "update", "proj"], **run)
    assert updated.returncode == 0, updated.stderr
    assert (project / "RELEASE-NOTE.txt").read_text() == "arrived with 99.0.0\n"
    assert "_commit: v99.0.0" in (project / ".copier-answers.yml").read_text()


def test_history_bundle_lets_a_new_machine_update_an_old_project(tmp_path, monkeypatch):
    """A releases bundle supplies template versions this machine never ran."""
    from ptscaffold import _history

    checkout = copy_template(tmp_path / "checkout")
    set_version(checkout, "0.0.1")
    (checkout / "template" / "NOTES.md").write_text(NOTES_V1)
    git(checkout, "init", "-q")
    commit_all(checkout, "release 0.0.1")
    git(checkout, "tag", "v0.0.1")
    bundle = tmp_path / "_releases.bundle"
    assert _history.build_bundle(checkout, bundle, [("0.0.1", "HEAD")]) == ["v0.0.1"]

    # Machine A, with ptscaffold 0.0.1, makes the project.
    monkeypatch.setattr(_template, "template_root", lambda: checkout)
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    assert "_commit: v0.0.1" in (project / ".copier-answers.yml").read_text()

    # Machine B only ever installed the current ptscaffold: empty caches.
    monkeypatch.setattr(_template, "template_root", lambda: REPO_ROOT)
    monkeypatch.setenv("PTSCAFFOLD_CACHE_DIR", str(tmp_path / "b-cache"))
    monkeypatch.setenv("COPIER_CACHE_DIR", str(tmp_path / "b-copier"))
    before = tree_state(project)
    with pytest.raises(UpdateRefused, match="not available offline"):
        ptscaffold.update(project, quiet=True)
    assert tree_state(project) == before

    monkeypatch.setattr(_template, "history_bundle", lambda: bundle)
    result = ptscaffold.update(project, quiet=True)
    assert result.conflicts == []
    assert f"_commit: v{ptscaffold.__version__}" in (project / ".copier-answers.yml").read_text()
    assert not (project / "NOTES.md").exists()  # removed by the newer template


# --- all or nothing ---------------------------------------------------------------------------


def _stop_at(monkeypatch, owner, name: str, n: int, error: BaseException) -> list[int]:
    """Make the `n`th call of `owner.name` raise `error`; returns the call counter, whose
    `stop()` ends the interruptions (the test's other patches stay)."""
    original = getattr(owner, name)
    calls = _Calls([0])

    def counted(*args, **kwargs):
        calls[0] += 1
        if calls[0] == n and not calls.stopped:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


class _Calls(list):
    stopped = False

    def stop(self) -> None:
        self.stopped = True


def _update_with_edits(tmp_path, bundled) -> Path:
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    _user_edits(project)
    (project / "ignored.log").write_text("the user's, ignored\n")
    (project / ".gitignore").write_text((project / ".gitignore").read_text() + "*.log\n")
    commit_all(project, "ignore logs")
    bundled("2.0.0")
    return project


def _plumbum_call():
    from plumbum.commands.base import BaseCommand

    return BaseCommand, "__call__"


def _render_file():
    import copier._main

    return copier._main.Worker, "_render_file"


# Points spread over a whole update (about 180 git calls and 150 file renders here): the
# renders of the old template in a temporary folder, the render into the project (from about
# the 50th file and the 95th git call on, the project has changed), the render of the new
# template, and git's apply, merge and index updates in the project.
INTERRUPTS = [("git", n) for n in (1, 90, 120, 160, 178)] + [("render", n) for n in (1, 60, 145)]


@pytest.mark.parametrize(("where", "n"), INTERRUPTS, ids=[f"{w}-{n}" for w, n in INTERRUPTS])
def test_interrupted_update_leaves_the_project_exactly_as_before(
    tmp_path, bundled, monkeypatch, where, n
):
    project = _update_with_edits(tmp_path, bundled)
    before = tree_state(project)
    owner, name = _plumbum_call() if where == "git" else _render_file()
    calls = _stop_at(monkeypatch, owner, name, n, KeyboardInterrupt())
    result = invoke("update", str(project))
    calls.stop()
    if calls[0] < n:
        pytest.skip(f"the update makes only {calls[0]} such calls")
    assert result.exit_code == 130, result.stderr
    assert "interrupted" in result.stderr and "exactly as it was before" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_state(project) == before
    # ... and the update still works afterwards
    _check_merged(project, invoke("update", str(project)))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_signal_as_the_update_ends_undoes_it_whole(tmp_path, bundled, monkeypatch):
    """A signal just before the journal is removed: the update is undone, as one that came
    earlier (before, the journal of the finished update stayed, for the next one to undo)."""
    from ptscaffold import _snapshot

    project = _update_with_edits(tmp_path, bundled)
    before = tree_state(project)
    discard, signalled = _snapshot.Snapshot.discard, []

    def signalled_first(self):
        if not signalled:
            signalled.append(True)
            signal.raise_signal(signal.SIGTERM)  # a real signal, to the real handlers
        discard(self)

    monkeypatch.setattr(_snapshot.Snapshot, "discard", signalled_first)
    result = invoke("update", str(project))
    assert signalled
    assert result.exit_code == 143, result.stderr
    assert "interrupted; nothing was updated" in result.stderr, result.stderr
    assert tree_state(project) == before
    assert not (project / ".git" / "ptscaffold-update").exists()


# A failing git call inside the project is often one copier tolerates; a file it cannot write
# is not.
FAILURES = [("git", 8), ("render", 60), ("render", 100), ("render", 140)]


@pytest.mark.parametrize(("where", "n"), FAILURES, ids=[f"{w}-{n}" for w, n in FAILURES])
def test_failed_update_leaves_the_project_exactly_as_before(
    tmp_path, bundled, monkeypatch, where, n
):
    project = _update_with_edits(tmp_path, bundled)
    before = tree_state(project)
    owner, name = _plumbum_call() if where == "git" else _render_file()
    calls = _stop_at(monkeypatch, owner, name, n, OSError(28, "No space left on device"))
    result = invoke("update", str(project))
    calls.stop()
    assert calls[0] >= n
    assert result.exit_code == 1, result.stderr
    # copier's own progress line may come first; the error is one line
    assert result.stderr.strip().splitlines()[-1].startswith("error: "), result.stderr
    assert result.stderr.count("error") == 1, result.stderr
    assert "No space left" in result.stderr and "exactly as it was before" in result.stderr
    assert tree_state(project) == before


@pytest.mark.parametrize(("where", "n"), [("git", 160), ("render", 100)])
def test_the_interrupts_reach_into_the_project(tmp_path, bundled, monkeypatch, where, n):
    """The interrupt points above are not all before copier touches the project: stopping
    there without the undo leaves it changed (what ptscaffold 0.1.0 did)."""
    from ptscaffold import _snapshot

    project = _update_with_edits(tmp_path, bundled)
    before = tree_state(project)
    monkeypatch.setattr(_snapshot.Snapshot, "restore", lambda self: [])
    owner, name = _plumbum_call() if where == "git" else _render_file()
    _stop_at(monkeypatch, owner, name, n, KeyboardInterrupt())
    assert invoke("update", str(project)).exit_code == 130
    assert tree_state(project) != before


def test_update_to_a_version_that_does_not_exist_lists_the_versions(project):
    before = tree_state(project)
    result = invoke("update", str(project), "--to", "9.9.9")
    assert result.exit_code == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "9.9.9 does not exist" in result.stderr
    assert f"v{ptscaffold.__version__}" in result.stderr
    assert "network" not in result.stderr
    assert tree_state(project) == before


def test_untrusted_template_cannot_plant_a_repository_through_update(tmp_path, template_repo):
    repo, _ = template_repo
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    marker = tmp_path / "ran"
    # A name that renders to `.git`: git itself never commits a `.git` folder.
    hook = repo / "template" / "sub" / "{{ '.git' }}" / "hooks" / "post-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / "template" / "sub" / "keep.txt").write_text("x\n")
    set_version(repo, "2.0.0")
    commit_all(repo, "v2 plants a repository")
    git(repo, "tag", "v2.0.0")
    result = invoke("update", str(project))
    assert result.exit_code == 0, result.stderr
    assert (project / "sub" / "keep.txt").is_file()
    assert not (project / "sub" / ".git").exists()
    assert not marker.exists()
