"""Releases: the versions come from this repository's history, every install carries them, and a
project made by ptscaffold 0.1.0 updates to this version on a machine that never ran 0.1.0.

The 0.1.0 projects are made as a 0.1.0 user made them: by the ptscaffold of the 0.1.0 release
commit (a copy of that commit, run from its own `generator/`), recording 0.1.0's `_src_path`.
They are updated by this checkout's ptscaffold with empty caches. 0.2.0 projects, made the
same way by the 0.2.0 release, carry their edits of the files 0.3.0 moved to the new paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import ptscaffold
import pytest
import template_matrix as tm
import yaml
from ptscaffold import _history, _template
from ptscaffold_testing import (  # noqa: F401
    REPO_ROOT,
    build_wheel,
    commit_all,
    git,
    invoke,
    isolated,
    ptscaffold_cache,
    source_copy,
    tree_state,
)

pytestmark = pytest.mark.skipif(
    not (REPO_ROOT / ".git").exists(), reason="needs this repository's git history"
)

OLD = "0.1.0"
NOTE = "\n\n# a note of the project's own\n"  # laid out as ruff format wants it
OUR_LINE = "Our own notes on this project."


def _bundle_heads(bundle: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True, check=True
    ).stdout
    return {ref: sha for sha, ref in (line.split() for line in out.splitlines())}


def test_the_shipped_bundle_holds_every_release_of_the_history(tmp_path: Path):
    """The bundle every install carries equals one built now from the history (commits are
    deterministic: the same template tree gives the same commit)."""
    found = dict(_history.releases(REPO_ROOT))
    assert OLD in found, "0.1.0 is a release of this history"
    assert ptscaffold.__version__ not in found, "the version being built is not released yet"
    fresh = tmp_path / "fresh.bundle"
    _history.build_bundle(REPO_ROOT, fresh)
    shipped = _template.history_bundle()
    assert shipped is not None, "generator/ptscaffold/_releases.bundle is missing"
    assert _bundle_heads(shipped) == _bundle_heads(fresh), (
        "the bundle is out of date with the history: run `python -m ptscaffold._history`"
    )


def test_a_release_is_the_last_commit_of_its_version(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "template").mkdir(parents=True)
    config = (REPO_ROOT / "copier.yml").read_text()
    git(repo, "init", "-q")
    commits = []
    for version in ("0.1.0", "0.1.0", "0.2.0", "0.2.0", "0.3.0"):
        (repo / "copier.yml").write_text(
            _history._VERSION.sub(
                f'template_version:\n  type: str\n  default: "{version}"', config, count=1
            )
        )
        (repo / "template" / "CHANGES").write_text(f"{len(commits)}\n")
        commit_all(repo, f"work on {version}")
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    assert _history.releases(repo) == [("0.1.0", commits[1]), ("0.2.0", commits[3])]


# --- a 0.1.0 project, updated --------------------------------------------------------------------


def checkout_release(version: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This repository as it was at the release commit of `version`."""
    commit = dict(_history.releases(REPO_ROOT))[version]
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    root = tmp_path_factory.mktemp(f"ptscaffold-{version}")
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    return root


@pytest.fixture(scope="module")
def release_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This repository as it was at the 0.1.0 release commit."""
    return checkout_release(OLD, tmp_path_factory)


def make_old_project(
    release_checkout: Path, dest: Path, answers: dict[str, str], version: str = OLD
) -> Path:
    """`ptscaffold new` as ptscaffold `version` (of `release_checkout`) ran it, with a cache of
    its own."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(release_checkout / "generator"),
        "PTSCAFFOLD_CACHE_DIR": str(dest.parent / "old-cache"),
        "COPIER_CACHE_DIR": str(dest.parent / "old-copier"),
    }
    data = [arg for key, value in answers.items() for arg in ("--data", f"{key}={value}")]
    subprocess.run(
        [sys.executable, "-m", "ptscaffold", "new", str(dest), "--defaults", "-q", *data],
        cwd=dest.parent,
        env=env,
        check=True,
        capture_output=True,
    )
    recorded = yaml.safe_load((dest / ".copier-answers.yml").read_text())
    assert recorded["_commit"] == f"v{version}"
    addresses = _template.LEGACY_URLS if version == OLD else (_template.CANONICAL_URL,)
    assert recorded["_src_path"] in addresses
    return dest


def moves_of(version: str, package: str = "proj") -> dict[str, str]:
    """Old path -> new path of each file that copier.yml's migration of `version` moves, for a
    package named `package`."""
    config = yaml.safe_load((REPO_ROOT / "copier.yml").read_text())
    (command,) = [m["command"] for m in config["_migrations"] if m["version"] == version]
    paths = [path.replace("{{ package_name }}", package) for path in command[2:]]
    return dict(zip(paths[::2], paths[1::2], strict=True))


MOVED_IN = "0.3.0"  # the version that grouped the package by role
LIFTED_IN = "0.4.0"  # moved the machinery (runtime/parallelize.py with it) to engine/


def unchanged_files(old: Path, answers: dict[str, str], tmp_path: Path) -> list[tuple[str, str]]:
    """Python files this version renders exactly as 0.1.0 did, for `answers`: their path in the
    0.1.0 project and in this version, files with code first, then moved ones. (This version
    rewrote every 0.1.0 module; an empty `__init__.py` is what both still render alike.)"""
    new = ptscaffold.new(
        tmp_path / "current" / old.name, data=answers, defaults=True, git=False, quiet=True
    )
    moves = moves_of(MOVED_IN)
    same = []
    for path, content in tm.read_tree(old).items():
        there = moves.get(path, path)
        if not (path.endswith(".py") and (new / there).is_file()):
            continue
        if (new / there).read_bytes() == content:
            same.append((not content.strip(), path == there, path, there))
    return [(path, there) for *_, path, there in sorted(same)]


def edit_where_unchanged(old: Path, new: Path, line: str) -> None:
    """Insert `line` into `old` (a file both versions render, differently) inside a stretch of
    lines that both versions share, where a merge has no reason to conflict."""
    ours, theirs = old.read_text().splitlines(), new.read_text().splitlines()
    shared = {tuple(theirs[i : i + 6]) for i in range(len(theirs) - 5)}
    at = next(i for i in range(len(ours) - 5) if tuple(ours[i : i + 6]) in shared)
    ours.insert(at + 3, line)
    old.write_text("\n".join(ours) + "\n")


def fresh_caches(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """A machine that never ran 0.1.0: nothing in the template or copier caches."""
    monkeypatch.setenv("PTSCAFFOLD_CACHE_DIR", str(root / "new-cache"))
    monkeypatch.setenv("COPIER_CACHE_DIR", str(root / "new-copier"))


COMBINATIONS = [
    {},
    {"task": "language_model", "amp": "fp16", "nan_guard": "false"},
    {"distributed": "ddp", "activation_checkpointing": "true", "logger": "tensorboard"},
]


@pytest.mark.slow
@pytest.mark.parametrize("answers", COMBINATIONS, ids=lambda a: tm.label(a) or "defaults")
def test_a_0_1_0_project_updates_keeping_its_edits(
    release_checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: dict
):
    project = make_old_project(release_checkout, tmp_path / "old" / "proj", answers)
    package = project / "src" / "proj"
    # A file the template did not change, edited
    kept = unchanged_files(project, answers, tmp_path)
    assert kept, "some Python file is the same"
    untouched, there = project / kept[0][0], project / kept[0][1]
    untouched.write_text((untouched.read_text() + NOTE).lstrip())
    ours = untouched.read_text()
    readme = project / "README.md"
    edit_where_unchanged(readme, tmp_path / "current" / "proj" / "README.md", OUR_LINE)
    commit_all(project, "the user's edits")

    fresh_caches(monkeypatch, tmp_path)
    result = ptscaffold.update(project, quiet=True)
    assert result.old_version == OLD and result.new_version.lstrip("v") == ptscaffold.__version__
    assert result.conflicts == []
    # as it was, at the path the template moved it to if it did
    assert there.read_text() == ours, "an edit of an unchanged file survives"
    assert untouched == there or not untouched.exists()
    assert OUR_LINE in readme.read_text().splitlines(), "an edit of a changed file merges"
    assert (package / "engine" / "step.py").is_file()
    assert (package / "engine" / "checkpoint.py").is_file()
    recorded = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert recorded["_commit"] == f"v{ptscaffold.__version__}"
    assert recorded["_src_path"] == _template.CANONICAL_URL, "the 0.1.0 address is migrated"
    # That an updated 0.1.0 project passes its own suite is shown once, with the edits users make
    # first (test_edits_of_model_data_config_and_train_survive_and_the_project_passes_its_tests)


@pytest.mark.slow
def test_an_edit_the_new_template_rewrites_is_a_listed_conflict(
    release_checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    project = make_old_project(release_checkout, tmp_path / "old" / "proj", {})
    train = project / "src" / "proj" / "train.py"
    first, rest = train.read_text().split("\n", 1)
    train.write_text(first.replace("Train ", "Train, on our cluster, ") + "\n" + rest)
    commit_all(project, "the user's edit of the training script")

    fresh_caches(monkeypatch, tmp_path)
    result = invoke("update", str(project))
    assert result.exit_code == 3, result.stderr
    assert "src/proj/train.py" in result.stderr
    text = train.read_text()
    assert "<<<<<<<" in text and "on our cluster" in text, "the user's line is kept in the markers"


@pytest.mark.slow
def test_updating_back_to_0_1_0_is_refused(
    release_checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    project = make_old_project(release_checkout, tmp_path / "old" / "proj", {})
    fresh_caches(monkeypatch, tmp_path)
    ptscaffold.update(project, quiet=True)
    commit_all(project, "update to the new template")
    before = tree_state(project)
    result = invoke("update", str(project), "--to", OLD)
    assert result.exit_code == 1
    assert f"downgrading from {ptscaffold.__version__} to {OLD}" in result.stderr
    assert tree_state(project) == before


def plain_copier_update(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`copier update --trust --defaults ARGS` as copier documents it: git reaches
    git+ptscaffold://template through the git-remote-ptscaffold helper installed beside this
    interpreter."""
    helper = shutil.which("git-remote-ptscaffold", path=str(Path(sys.executable).parent))
    helper = helper or shutil.which("git-remote-ptscaffold")
    assert helper, "git-remote-ptscaffold is not installed (pip install -e . installs it)"
    path = os.pathsep.join([str(Path(helper).parent), os.environ.get("PATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "copier", "update", "--trust", "--defaults", *args],
        cwd=project,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )


def update_without_conflict(project: Path, through: str, old_version: str) -> None:
    """`ptscaffold update` (`through="ptscaffold"`) or a plain `copier update` of `project`, made
    by `old_version`: either succeeds, and ptscaffold's lists no conflicted file."""
    if through == "ptscaffold":
        result = ptscaffold.update(project, quiet=True)
        assert result.old_version == old_version and result.conflicts == []
    else:
        proc = plain_copier_update(project, "--quiet")
        assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_plain_copier_update_works_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    precision = project / "src" / "proj" / "runtime" / "precision.py"
    assert "torch.autocast" not in precision.read_text()  # amp=none: the float32 Precision
    fresh_caches(monkeypatch, tmp_path)
    proc = plain_copier_update(project, "--data", "amp=bf16")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "torch.autocast" in precision.read_text(), "the changed answer renders"
    recorded = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert recorded["amp"] == "bf16" and recorded["_src_path"] == _template.CANONICAL_URL


@pytest.mark.slow
def test_an_installed_wheel_updates_a_0_1_0_project_and_serves_plain_copier(
    release_checkout: Path, tmp_path: Path
):
    """`pip install .` on a machine that never ran 0.1.0: its ptscaffold updates a 0.1.0
    project offline, and its git-remote-ptscaffold lets plain copier update the result."""
    wheel = build_wheel(source_copy(tmp_path / "src"), tmp_path / "dist")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = str(bindir / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True
    )
    project = make_old_project(release_checkout, tmp_path / "old" / "proj", {})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        PATH=os.pathsep.join([str(bindir), env.get("PATH", "")]),
        PTSCAFFOLD_CACHE_DIR=str(tmp_path / "machine-cache"),
        COPIER_CACHE_DIR=str(tmp_path / "machine-copier"),
    )
    run = {"cwd": project, "env": env, "capture_output": True, "text": True, "timeout": 600}
    updated = subprocess.run([str(bindir / "ptscaffold"), "update"], **run)
    assert updated.returncode == 0, updated.stderr
    assert (project / "src" / "proj" / "engine" / "step.py").is_file()
    commit_all(project, "update to the new template")
    copier = subprocess.run(
        [python, "-m", "copier", "update", "--trust", "--defaults", "--data", "amp=bf16"], **run
    )
    assert copier.returncode == 0, copier.stderr[-2000:]
    assert "torch.autocast" in (project / "src" / "proj" / "runtime" / "precision.py").read_text()


# --- a 0.2.0 project, updated across the moves of 0.3.0 -----------------------------------------

MOVED_FROM = "0.2.0"
# 0.3.0 grouped the package by role, 0.4.0 put the machinery in engine/. The files a 0.2.0 user
# edits here, under src/PKG/: where 0.2.0 had them -> where the current version keeps them
# (model.py stays, for comparison).
EDITED_DEFAULTS = {
    "model.py": "model.py",
    "data.py": "data/datasets.py",
    "checkpoint.py": "engine/checkpoint.py",  # into checkpoint/ by 0.3.0, to engine/ by 0.4.0
    "metrics.py": "engine/record/metrics.py",  # into record/ by 0.3.0, with it into engine/
}
EDITED_LANGUAGE_MODEL = {
    "model.py": "model.py",
    "data.py": "data/datasets.py",
    "tokenizer.py": "data/tokenizer.py",
}
OUR_COMMENT = "# our own note, which must follow the file wherever the template moves it"


@pytest.fixture(scope="module")
def checkout_0_2_0(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This repository as it was at the 0.2.0 release commit."""
    return checkout_release(MOVED_FROM, tmp_path_factory)


def without_our_comment(text: str) -> list[str]:
    return [line for line in text.splitlines() if line != OUR_COMMENT]


def python_code(project: Path) -> dict[str, list[str]]:
    """The lines of each Python file under the project's src/ and tests/, without our notes."""
    return {
        path.relative_to(project).as_posix(): without_our_comment(path.read_text(encoding="utf-8"))
        for folder in ("src", "tests")
        for path in sorted((project / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("answers", "edited", "through"),
    [
        ({}, EDITED_DEFAULTS, "ptscaffold"),
        ({"task": "language_model"}, EDITED_LANGUAGE_MODEL, "copier"),
    ],
    ids=["defaults-ptscaffold-update", "language_model-copier-update"],
)
def test_a_0_2_0_project_keeps_its_edits_of_moved_files(
    checkout_0_2_0: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answers: dict[str, str],
    edited: dict[str, str],
    through: str,
):
    project = make_old_project(checkout_0_2_0, tmp_path / "old" / "proj", answers, MOVED_FROM)
    package = project / "src" / "proj"
    current = ptscaffold.new(
        tmp_path / "current" / "proj", data=answers, defaults=True, git=False, quiet=True
    )
    files = set(git(project, "ls-files").split())
    # Where each file goes: 0.4.0's move of a path wins over 0.3.0's (0.3.0's move of a file to a
    # place this version does not render is skipped)
    moves = moves_of(MOVED_IN) | moves_of(LIFTED_IN)
    dropped = {path for path in files if not (current / path).is_file()}
    assert dropped == files & moves.keys(), (
        "each 0.2.0 file this version does not render is one a migration moves"
    )
    # ...and lands where this version renders it, but for the modules this version merged into
    # checkpoint.py, recorder.py and runtime/contexts.py, and the sharded checkpoints' (FSDP
    # only): the update removes them
    gone = {path for path in dropped if not (current / moves[path]).is_file()}
    merged = {
        *("storage.py", "shards.py"),  # into checkpoint.py
        *("progress.py", "runinfo.py"),  # into record/recorder.py
        "profiling.py",  # into runtime/contexts.py
    }
    assert gone <= {f"src/proj/{name}" for name in merged}, gone
    fresh = {old: (current / "src" / "proj" / new).read_text() for old, new in edited.items()}
    assert any(fresh[old] != (package / old).read_text() for old in edited if old != edited[old]), (
        "the template changed a moved file too, so the move is a three-way merge"
    )
    for old, new in edited.items():
        edit_where_unchanged(package / old, current / "src" / "proj" / new, OUR_COMMENT)
    commit_all(project, "the user's edits")

    fresh_caches(monkeypatch, tmp_path)
    update_without_conflict(project, through, MOVED_FROM)
    recorded = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert recorded["_commit"] == f"v{ptscaffold.__version__}"
    assert git(project, "diff", "--name-only", "--diff-filter=U") == ""
    # checkpointer.py, which the user left alone, is moved: this version's, whole
    checkpointer = (package / "engine" / "checkpointer.py").read_text()
    assert checkpointer == (current / "src" / "proj" / "engine" / "checkpointer.py").read_text()
    assert not (package / "checkpointer.py").exists()
    for old, new in edited.items():
        if old != new:
            assert not (package / old).exists(), f"{old} moved to {new}"
        text = (package / new).read_text()
        assert OUR_COMMENT in text.splitlines(), f"the edit of {old} is in {new}"
        assert without_our_comment(text) == fresh[old].splitlines(), (
            f"{new} has the template's changes and nothing else of the merge"
        )

    modules = ["train", *(new.removesuffix(".py").replace("/", ".") for new in edited.values())]
    imports = "; ".join(f"import proj.{module}" for module in modules)
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", imports], cwd=project, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


# The files a user edits first, at their path in each earlier release (0.3.0 keeps all four at
# the top of the package but data.py, which became data/datasets.py)
EDITED_FIRST = {"model.py": "model.py", "data.py": "data/datasets.py"}
EDITED_FIRST |= {"config.py": "config.py", "train.py": "train.py"}


def note_above_a_shared_definition(old: Path, new: Path, comment: str) -> None:
    """Put `comment` on the line above a top-level `def` or `class` of `old`, as a user notes a
    function, at the first such place that a three-way merge (`git merge-file`, as the update
    merges) carries into `new` without a conflict: a place the template did not change. Places
    whose three lines above the new version keeps too come first; ruff formats the note as it is."""
    ours, theirs = old.read_text().splitlines(), new.read_text().splitlines()
    definitions = ("def ", "class ", "@")
    candidates = [
        i
        for i in range(3, len(ours) - 3)
        if ours[i].startswith(definitions) and not ours[i - 1].startswith("@")
    ]
    shared = {tuple(theirs[i : i + 5]) for i in range(len(theirs) - 4)}
    candidates.sort(key=lambda i: tuple(ours[i - 3 : i + 2]) not in shared)
    with tempfile.TemporaryDirectory() as scratch:
        base, mine, template = (Path(scratch) / name for name in ("base", "mine", "template"))
        base.write_text(old.read_text())
        template.write_text(new.read_text())
        for i in candidates:
            noted = "\n".join([*ours[:i], comment, *ours[i:]]) + "\n"
            mine.write_text(noted)
            merge = subprocess.run(
                ["git", "merge-file", "-p", "-q", str(mine), str(base), str(template)],
                capture_output=True,
            )
            if merge.returncode == 0:
                old.write_text(noted)
                return
    raise AssertionError(f"{old.name}: no definition whose note merges into {new.name} cleanly")


def noted_project(
    version: str, edited: dict[str, str], tmp_path: Path, factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A default project of release `version` with OUR_COMMENT above a definition of each file of
    `edited` (its path there -> its path in this version), where a merge carries it cleanly; and
    the project this version makes, to compare with."""
    checkout = checkout_release(version, factory)
    project = make_old_project(checkout, tmp_path / "old" / "proj", {}, version)
    current = ptscaffold.new(tmp_path / "current" / "proj", defaults=True, git=False, quiet=True)
    for old, new in edited.items():
        note_above_a_shared_definition(
            project / "src" / "proj" / old, current / "src" / "proj" / new, OUR_COMMENT
        )
    return project, current


@pytest.mark.slow
@pytest.mark.parametrize("version", [OLD, MOVED_FROM])
def test_edits_of_model_data_config_and_train_survive_and_the_project_passes_its_tests(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch, version: str
):
    """The release check of issue-sized user edits: a project of each earlier release, edited in
    the four files users change first, updates with no conflict (the edits sit where the
    template did not change), every edit is kept at the file's new path, and `ptscaffold update`
    itself runs the updated project's tests and reports them passing.

    The updated project's code is a fresh default project's, line for line, but for the notes:
    the default project's whole suite runs in test_template_projects, so the update runs one
    test file of it here (PYTEST_ADDOPTS, which the project's pytest reads), enough to show that
    the update runs the project's tests and reads their result."""
    project, current = noted_project(version, EDITED_FIRST, tmp_path, tmp_path_factory)
    package = project / "src" / "proj"
    commit_all(project, "the user's edits")

    fresh_caches(monkeypatch, tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(package.parent))  # the tests' Python imports the project
    monkeypatch.setenv("PYTEST_ADDOPTS", "tests/test_model.py")
    result = invoke("update", str(project))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "The project's tests pass" in result.stdout, result.stdout + result.stderr
    for old, new in EDITED_FIRST.items():
        assert OUR_COMMENT in (package / new).read_text(), f"the edit of {old} is in {new}"
        assert old == new or not (package / old).exists(), f"{old} moved to {new}"
    code, fresh = python_code(project), python_code(current)
    assert code.keys() == fresh.keys()
    assert [path for path in code if code[path] != fresh[path]] == []


# --- a 0.3.0 project, updated to the slimmer template -------------------------------------------

SLIMMED_FROM = "0.3.0"  # the version whose default project the next one cut down


def tracked_tree(project: Path) -> dict[str, bytes]:
    """The files git tracks in `project`, as they are on disk."""
    return {path: (project / path).read_bytes() for path in git(project, "ls-files").split()}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("answers", "through"),
    [({}, "ptscaffold"), ({"task": "language_model"}, "copier")],
    ids=["defaults-ptscaffold-update", "language_model-copier-update"],
)
def test_an_unedited_0_3_0_project_updates_to_exactly_a_fresh_project(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    answers: dict[str, str],
    through: str,
):
    """What the user sees of the update is a clean diff: the files this version no longer renders
    are deleted, the others changed in place, no conflict, and the result is byte for byte the
    project this version makes with the same answers."""
    checkout = checkout_release(SLIMMED_FROM, tmp_path_factory)
    project = make_old_project(checkout, tmp_path / "old" / "proj", answers, SLIMMED_FROM)
    before = set(git(project, "ls-files").split())
    current = ptscaffold.new(
        tmp_path / "current" / "proj", data=answers, defaults=True, git=False, quiet=True
    )
    fresh = tm.read_tree(current)
    assert before - fresh.keys(), "this version renders fewer files than 0.3.0 did"

    fresh_caches(monkeypatch, tmp_path)
    update_without_conflict(project, through, SLIMMED_FROM)
    git(project, "add", "--all")
    statuses = {
        line[3:]: line[:2].strip()
        for line in git(project, "status", "--porcelain", "--no-renames").splitlines()
    }
    assert set(statuses.values()) <= {"M", "D", "A"}, statuses
    assert {path for path, status in statuses.items() if status == "D"} == before - fresh.keys()
    assert tracked_tree(project) == fresh


@pytest.mark.slow
def test_a_0_3_0_project_keeps_its_edit_of_runtime_parallelize(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    """0.3.0 kept parallelize.py in runtime/; this version keeps it in engine/, with the rest of
    the machinery. A user's note in the old file follows it there, and the old file is gone."""
    answers = {"distributed": "ddp", "activation_checkpointing": "true"}
    old, new = "src/proj/runtime/parallelize.py", "src/proj/engine/parallelize.py"
    assert moves_of(LIFTED_IN)[old] == new
    checkout = checkout_release(SLIMMED_FROM, tmp_path_factory)
    project = make_old_project(checkout, tmp_path / "old" / "proj", answers, SLIMMED_FROM)
    current = ptscaffold.new(
        tmp_path / "current" / "proj", data=answers, defaults=True, git=False, quiet=True
    )
    fresh = (current / new).read_text()
    assert (project / old).is_file() and not (project / new).exists()
    edit_where_unchanged(project / old, current / new, OUR_COMMENT)
    commit_all(project, "the user's note")

    fresh_caches(monkeypatch, tmp_path)
    update_without_conflict(project, "ptscaffold", SLIMMED_FROM)
    assert git(project, "diff", "--name-only", "--diff-filter=U") == ""
    assert not (project / old).exists(), f"{old} moved to {new}"
    text = (project / new).read_text()
    assert OUR_COMMENT in text.splitlines(), f"the note in {old} is in {new}"
    assert without_our_comment(text) == fresh.splitlines()


# --- a 0.3.0 project, updated across the move of the machinery to engine/ -----------------------

# A 0.3.0 user's first edits: notes in the model and in two machinery files this version moves
# to engine/, at their path there and here
EDITED_IN_0_3_0 = {
    "model.py": "model.py",
    "step.py": "engine/step.py",
    "record/recorder.py": "engine/record/recorder.py",
}
OUR_SETTING = "    hidden: int = 64  # our own setting"


@pytest.mark.slow
def test_a_0_3_0_project_keeps_its_model_edit_its_notes_in_moved_files_and_its_setting(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    """The update carries a 0.3.0 user's notes in model.py and in the machinery files this version
    moved into engine/ to their new paths, without a conflict there. The setting they added to
    0.3.0's config.py, whose sections now live in task_config.py as pydantic declarations, comes
    back as a listed conflict in config.py that holds their line: nothing is dropped."""
    project, _ = noted_project(SLIMMED_FROM, EDITED_IN_0_3_0, tmp_path, tmp_path_factory)
    package = project / "src" / "proj"
    config = package / "config.py"
    declared = "class ModelConfig:\n"
    assert declared in config.read_text()
    config.write_text(config.read_text().replace(declared, declared + OUR_SETTING + "\n", 1))
    commit_all(project, "the user's edits")

    fresh_caches(monkeypatch, tmp_path)
    result = invoke("update", str(project))
    assert result.exit_code == 3, result.stdout + result.stderr
    conflicted = git(project, "diff", "--name-only", "--diff-filter=U").split()
    assert conflicted == ["src/proj/config.py"], result.stderr
    for old, new in EDITED_IN_0_3_0.items():
        noted = OUR_COMMENT in (package / new).read_text().splitlines()
        assert noted, f"the note in {old} is in {new}"
        assert old == new or not (package / old).exists(), f"{old} moved to {new}"
    text = config.read_text()
    assert OUR_SETTING in text.splitlines() and "<<<<<<<" in text, "kept in the conflict markers"
