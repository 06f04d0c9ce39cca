"""`ptscaffold update` never leaves a project half updated, and never loses a file.

Real 0.1.0 projects (made by the 0.1.0 release's own ptscaffold, see test_release.py) are
updated by a real `ptscaffold update` process, and real signals stop it once it has started
to change the project: SIGTERM and SIGHUP put the project back as Ctrl-C does, an update killed
outright is put back by the next one, the undo leaves alone the files other programs write
meanwhile, and a file git ignores where the new template has one is kept.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import ptscaffold
import pytest
from ptscaffold_testing import (  # noqa: F401
    REPO_ROOT,
    commit_all,
    invoke,
    isolated,
    ptscaffold_cache,
    tree_state,
)
from test_release import make_old_project, release_checkout  # noqa: F401

pytestmark = [
    pytest.mark.skipif(
        not (REPO_ROOT / ".git").exists(), reason="needs this repository's git history"
    ),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

TRAIN = "src/proj/train.py"
OUR_EDIT = "Train, on our cluster, "
JOURNAL = Path(".git", "ptscaffold-update")
FINISHED = (0, 3)  # exit codes of an update that ran to its end (3: with conflicts)


@pytest.fixture
def old_project(release_checkout: Path, tmp_path: Path) -> Path:  # noqa: F811
    """A 0.1.0 project whose training script the user edited, on a line the update rewrites."""
    project = make_old_project(release_checkout, tmp_path / "old" / "proj", {})
    train = project / TRAIN
    first, rest = train.read_text().split("\n", 1)
    train.write_text(first.replace("Train ", OUR_EDIT) + "\n" + rest)
    commit_all(project, "the user's edit of the training script")
    return project


def _start_update(project: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ptscaffold", "update", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _mtimes(project: Path) -> dict[str, int]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(project):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            found[str(path)] = path.lstat().st_mtime_ns
    return found


def _under_way(project: Path, proc: subprocess.Popen[str], before: dict[str, int]) -> bool:
    """Wait until the update has changed a file of the project (True) or ended (False)."""
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if _mtimes(project) != before:
            return True
        time.sleep(0.002)
    return False


def _stop_an_update(pristine: Path, work: Path, signum: int, meanwhile=None):
    """Update a copy of `pristine` and send it `signum` once it has changed the project, after
    `meanwhile(project)`. Returns (project, its state before, exit code, stderr); a new copy is
    tried when the update finished first (a signal must land in the middle of it)."""
    for attempt in range(3):
        project = work / f"try-{attempt}" / pristine.name
        shutil.copytree(pristine, project, symlinks=True)
        before, mtimes = tree_state(project), _mtimes(project)
        proc = _start_update(project)
        if _under_way(project, proc, mtimes):
            if meanwhile is not None:
                meanwhile(project)
            proc.send_signal(signum)
        _, err = proc.communicate(timeout=300)
        if proc.returncode not in FINISHED:
            return project, before, proc.returncode, err
    pytest.fail("the update finished before the signal, three times")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_put_the_project_back_as_ctrl_c_does(old_project, tmp_path, signum):
    project, before, code, err = _stop_an_update(old_project, tmp_path / "work", signum)
    assert code == 128 + signum, err
    assert "interrupted; nothing was updated" in err and "exactly as it was before" in err, err
    assert "Traceback" not in err
    assert tree_state(project) == before
    assert OUR_EDIT in (project / TRAIN).read_text()
    assert not (project / JOURNAL).exists()


def test_an_update_killed_outright_is_put_back_by_the_next_one(old_project, tmp_path):
    project, before, code, err = _stop_an_update(old_project, tmp_path / "work", signal.SIGKILL)
    assert code == -signal.SIGKILL, err
    assert tree_state(project) != before, "the killed update had changed the project"

    again = _start_update(project)
    _, err = again.communicate(timeout=300)
    assert "killed before it finished" in err and "it was undone first" in err, err
    assert "nothing was updated" not in err and "commit or stash" not in err, err
    assert again.returncode == 3, err  # the update itself: the user's edit is a conflict
    assert OUR_EDIT in (project / TRAIN).read_text()
    assert not (project / JOURNAL).exists()

    clean = tmp_path / "clean" / project.name
    shutil.copytree(old_project, clean, symlinks=True)
    assert _start_update(clean).wait(timeout=300) == 3
    assert tree_state(project) == tree_state(clean), "as if the killed update never happened"


def test_a_killed_update_is_not_undone_over_commits_made_since(old_project, tmp_path):
    project, _, code, _ = _stop_an_update(old_project, tmp_path / "work", signal.SIGKILL)
    assert code == -signal.SIGKILL
    commit_all(project, "the user commits what the killed update left")
    after = tree_state(project)
    result = invoke("update", str(project))
    assert result.exit_code == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "killed before it finished" in result.stderr and "git reset --hard" in result.stderr
    assert "commit or stash" not in result.stderr
    assert tree_state(project) == after, "the commit and its files stay as they are"


def test_the_undo_keeps_the_files_other_programs_write_meanwhile(old_project, tmp_path):
    checkpoint = Path("runs", "step_000500.pt")  # ignored by the project's .gitignore

    def training_run_saves(project: Path) -> None:
        (project / checkpoint).parent.mkdir(exist_ok=True)
        (project / checkpoint).write_bytes(b"weights at step 500")

    project, before, code, err = _stop_an_update(
        old_project, tmp_path / "work", signal.SIGINT, meanwhile=training_run_saves
    )
    assert code == 130, err
    assert (project / checkpoint).read_bytes() == b"weights at step 500"
    assert "exactly as it was before" in err and "runs" not in err, err
    after = tree_state(project)
    assert after.pop(str(checkpoint)) and after == before


def _ignored_sweep_of_ours(project: Path) -> Path:
    """The user's configs/sweep.toml (new in the template since 0.1.0), which git ignores."""
    exclude = project / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text() + "configs/sweep.toml*\n")
    ours = project / "configs" / "sweep.toml"
    ours.write_text("# our own sweep\n")
    return ours


def test_an_ignored_file_where_the_new_template_has_one_is_kept(old_project, tmp_path):
    ours = _ignored_sweep_of_ours(old_project)
    result = invoke("update", str(old_project))
    assert ours.read_text() == "# our own sweep\n"
    assert result.exit_code == 3, result.stderr
    assert "  configs/sweep.toml.ptscaffold-new" in result.stderr.splitlines()  # listed
    beside = ours.with_name("sweep.toml.ptscaffold-new")
    fresh = ptscaffold.new(tmp_path / "fresh" / "proj", defaults=True, git=False, quiet=True)
    assert beside.read_bytes() == (fresh / "configs" / "sweep.toml").read_bytes()


def test_an_ignored_file_whose_template_version_has_no_room_beside_it_is_refused(old_project):
    ours = _ignored_sweep_of_ours(old_project)
    beside = ours.with_name("sweep.toml.ptscaffold-new")
    beside.write_text("in the way\n")
    before = tree_state(old_project)
    result = invoke("update", str(old_project))
    assert result.exit_code == 1, result.stderr
    message = result.stderr.strip().splitlines()[-1]  # copier's progress line may come first
    assert message.startswith("error: ") and result.stderr.count("error") == 1, result.stderr
    assert "configs/sweep.toml.ptscaffold-new" in message and "exactly as it was" in message
    assert tree_state(old_project) == before
    assert ours.read_text() == "# our own sweep\n" and beside.read_text() == "in the way\n"
