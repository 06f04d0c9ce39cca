"""The `ptscaffold` command: options, messages, exit codes and where files end up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import ptscaffold
import pytest
import yaml
from ptscaffold import _interrupts, _questions, _template
from ptscaffold_testing import REPO_ROOT, copy_template, git, invoke, isolated, ptscaffold_cache  # noqa: F401


def test_version_matches_copier_yml():
    config = yaml.safe_load((REPO_ROOT / "copier.yml").read_text())
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ptscaffold {config['template_version']['default']}"
    assert ptscaffold.__version__ == config["template_version"]["default"]


def test_help_shows_examples_and_exit_codes():
    result = invoke("--help")
    assert result.exit_code == 0
    assert "ptscaffold new my-project" in result.stdout
    assert "Exit codes:" in result.stdout and "130" in result.stdout
    assert "--install-completion" in result.stdout


@pytest.mark.parametrize("command", ["new", "update", "features"])
def test_every_command_help_has_an_example(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert f"ptscaffold {command}" in result.stdout.split("Example")[-1]


def test_features_lists_every_question_with_choices_and_help():
    result = invoke("features")
    assert result.exit_code == 0
    config = yaml.safe_load((REPO_ROOT / "copier.yml").read_text())
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if line.strip()}
    for name, spec in config.items():
        computed = isinstance(spec, dict) and spec.get("when") is False
        if name.startswith("_") or computed:
            assert name not in lines, f"{name} is not a question"
            continue
        assert name in lines, f"{name} missing from the features table"
        assert spec["help"].split("(")[0].strip() in lines[name]
        choices = spec.get("choices") or []
        for value in choices.values() if isinstance(choices, dict) else choices:
            assert str(value) in lines[name]


def test_new_defaults_makes_a_git_repo_with_one_commit_without_identity(tmp_path, isolated):  # noqa: F811
    assert not (isolated / ".gitconfig").read_text()  # no user.name / user.email anywhere
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults")
    assert result.exit_code == 0, result.stderr
    assert (dest / ".copier-answers.yml").is_file()
    assert git(dest, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(dest, "status", "--porcelain") == ""
    answers = yaml.safe_load((dest / ".copier-answers.yml").read_text())
    assert answers["_src_path"] == _template.CANONICAL_URL
    assert answers["_commit"] == f"v{ptscaffold.__version__}"
    assert answers["project_name"] == "proj"
    # Next steps printed once (copier's _message_after_copy, with the real destination).
    assert result.stdout.count("pip install") == 1
    assert str(dest) in result.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".proj.")]


def test_new_uses_the_configured_identity(tmp_path, isolated):  # noqa: F811
    (isolated / ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@example.com\n")
    dest = ptscaffold.new(tmp_path / "p", defaults=True, quiet=True)
    assert git(dest, "log", "--format=%an <%ae>").strip() == "Ada <ada@example.com>"


def test_no_git_leaves_no_repository(tmp_path):
    dest = ptscaffold.new(tmp_path / "p", defaults=True, git=False, quiet=True)
    assert (dest / ".copier-answers.yml").is_file()
    assert not (dest / ".git").exists()


def test_post_gen_hook_runs_as_a_script(tmp_path):
    project = tmp_path / "plain"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    hook = REPO_ROOT / "hooks" / "post_gen.py"
    subprocess.run(["python", str(hook), str(project)], check=True, env=os.environ)
    assert git(project, "ls-files").split() == ["a.txt"]


def test_existing_non_empty_destination_is_refused(tmp_path):
    dest = tmp_path / "proj"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine\n")
    result = invoke("new", str(dest), "--defaults")
    assert result.exit_code == 1
    assert "not empty" in result.stderr and "--force" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]
    assert (dest / "notes.txt").read_text() == "mine\n"


def test_existing_empty_destination_is_used(tmp_path):
    dest = tmp_path / "proj"
    dest.mkdir()
    assert invoke("new", str(dest), "--defaults").exit_code == 0
    assert (dest / ".copier-answers.yml").is_file()


def test_force_keeps_user_files(tmp_path):
    dest = tmp_path / "proj"
    (dest / "data").mkdir(parents=True)
    (dest / "notes.txt").write_text("mine\n")
    (dest / "README.md").write_text("my readme\n")  # a name the template also renders
    (dest / "data" / "raw.bin").write_bytes(b"\x00\x01")
    result = invoke("new", str(dest), "--defaults", "--force")
    assert result.exit_code == 0, result.stderr
    assert (dest / "notes.txt").read_text() == "mine\n"
    assert (dest / "README.md").read_text() == "my readme\n"
    assert "kept 1 existing file(s) instead of the template's: README.md" in result.stderr
    assert (dest / "data" / "raw.bin").read_bytes() == b"\x00\x01"
    assert (dest / ".copier-answers.yml").is_file()
    assert git(dest, "rev-list", "--count", "HEAD").strip() == "1"


def test_destination_that_is_a_file_is_refused(tmp_path):
    dest = tmp_path / "proj"
    dest.write_text("not a folder\n")
    result = invoke("new", str(dest), "--defaults", "--force")
    assert result.exit_code == 1
    assert "not a directory" in result.stderr
    assert dest.read_text() == "not a folder\n"


def test_parent_that_is_a_file_is_refused(tmp_path):
    parent = tmp_path / "parent"
    parent.write_text("")
    result = invoke("new", str(parent / "proj"), "--defaults")
    assert result.exit_code == 1
    assert "is not a directory" in result.stderr
    assert parent.read_text() == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to a read-only folder")
def test_unwritable_parent_is_refused(tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        result = invoke("new", str(parent / "proj"), "--defaults")
    finally:
        parent.chmod(0o700)
    assert result.exit_code == 1
    assert "not writable" in result.stderr


def test_missing_parents_are_created(tmp_path):
    dest = tmp_path / "a" / "b" / "proj"
    assert invoke("new", str(dest), "--defaults").exit_code == 0
    assert (dest / ".copier-answers.yml").is_file()


def test_destination_inside_another_repository_is_noted(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    dest = outer / "sub" / "proj"
    result = invoke("new", str(dest), "--defaults")
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and str(outer) in notes[0]
    assert git(dest, "rev-parse", "--show-toplevel").strip() == str(dest)


def test_no_terminal_without_defaults_says_what_to_pass(tmp_path):
    result = invoke("new", str(tmp_path / "proj"))
    assert result.exit_code == 2
    assert "--defaults" in result.stderr and "--data" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "proj").exists()


def test_all_answers_given_need_no_terminal(tmp_path):
    config = yaml.safe_load((REPO_ROOT / "copier.yml").read_text())
    data_file = tmp_path / "answers.yml"
    answers = {"project_name": "Full"}
    data_file.write_text(yaml.safe_dump(answers))
    questions = [q for q in ptscaffold.features() if q.name != "project_name"]
    given = {q.name: _default(q, config) for q in questions}
    reader = _questions.bundled()
    args = [f"--data={n}={v}" for n, v in given.items() if reader.applies(n, given)]
    assert any(q.when is not None for q in questions if f"--data={q.name}=" in str(args))
    result = invoke("new", str(tmp_path / "proj"), "--data-file", str(data_file), *args)
    assert result.exit_code == 0, result.stderr


def _default(question, config):
    if question.name == "package_name":
        return "full"
    value = question.default
    return str(value).lower() if isinstance(value, bool) else str(value)


def _untrusted_template(root: Path) -> Path:
    copy_template(root)
    config = root / "copier.yml"
    marker = root.parent / "task-ran"
    config.write_text(config.read_text() + f'\n_tasks:\n  - "touch {marker}"\n')
    return root


def test_untrusted_template_is_refused_without_trust(tmp_path):
    template = _untrusted_template(tmp_path / "tpl")
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template))
    assert result.exit_code == 1
    assert "--trust" in result.stderr and "tasks" in result.stderr
    assert not dest.exists()
    assert not (tmp_path / "task-ran").exists()


def test_untrusted_template_runs_with_trust(tmp_path):
    template = _untrusted_template(tmp_path / "tpl")
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template), "--trust")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "task-ran").exists()
    answers = yaml.safe_load((dest / ".copier-answers.yml").read_text())
    assert answers["_src_path"] == str(template)  # absolute, never relative


def test_ctrl_c_while_rendering_leaves_nothing_and_exits_130(tmp_path, monkeypatch):
    import copier._main

    original = copier._main.Worker._render_file
    calls = []

    def interrupted(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 3:  # some files are already written
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(copier._main.Worker, "_render_file", interrupted)
    dest = tmp_path / "deep" / "proj"
    result = invoke("new", str(dest), "--defaults")
    assert result.exit_code == 130
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == [tmp_path / "home"]


def test_ctrl_c_during_git_leaves_nothing(tmp_path, monkeypatch):
    from ptscaffold import _new

    def interrupted(project):
        assert any(Path(project).iterdir())
        raise KeyboardInterrupt

    monkeypatch.setattr(_new, "_run_hook", interrupted)
    result = invoke("new", str(tmp_path / "proj"), "--defaults")
    assert result.exit_code == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


# --- an untrusted template runs nothing through git -------------------------------------------


def _planting_template(root: Path, files: dict[str, str], executable: tuple[str, ...] = ()):
    """A copy of the template that also renders `files` (paths under template/)."""
    copy_template(root)
    for rel, text in files.items():
        path = root / "template" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel in executable:
            path.chmod(0o755)
    return root


def _vectors(marker: Path) -> dict[str, tuple[dict[str, str], tuple[str, ...]]]:
    """Each way a rendered tree can make git run a command; each touches `marker`."""
    touch = f"touch {marker}; true"
    return {
        "fsmonitor": ({".git/config": f'[core]\n\tfsmonitor = "{touch}"\n'}, ()),
        "post-commit hook": (
            {".git/hooks/post-commit": f"#!/bin/sh\ntouch {marker}\n"},
            (".git/hooks/post-commit",),
        ),
        "filter driver": (
            {
                ".gitattributes": "* filter=planted\n",
                ".git/config": f'[filter "planted"]\n\tclean = "touch {marker}; cat"\n',
            },
            (),
        ),
        "nested repository": ({"data/.git/config": f'[core]\n\tfsmonitor = "{touch}"\n'}, ()),
    }


def _plain_git_commit(tree: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@e", *args], cwd=tree, check=False
        )


@pytest.mark.parametrize("vector", list(_vectors(Path("m"))))
def test_planted_git_fires_with_plain_git(tmp_path, vector):
    """The control: rendered with --trust and committed with plain git, the vector runs."""
    marker = tmp_path / "ran"
    files, executable = _vectors(marker)[vector]
    template = _planting_template(tmp_path / "tpl", files, executable)
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template), "--trust",
                    "--no-git")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert not marker.exists()
    # the nested repository fires when git is used inside it, as a user would
    _plain_git_commit(dest / "data" if vector == "nested repository" else dest)
    assert marker.exists()


@pytest.mark.parametrize("no_git", [False, True], ids=["git", "no-git"])
@pytest.mark.parametrize("vector", list(_vectors(Path("m"))))
def test_untrusted_template_may_not_plant_a_git_repository(tmp_path, vector, no_git):
    marker = tmp_path / "ran"
    files, executable = _vectors(marker)[vector]
    template = _planting_template(tmp_path / "tpl", files, executable)
    dest = tmp_path / "proj"
    args = ["--no-git"] if no_git else []
    result = invoke("new", str(dest), "--defaults", "--template", str(template), *args)
    assert result.exit_code == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert ".git" in result.stderr and "--trust" in result.stderr
    assert not marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "tpl"]


@pytest.mark.parametrize("vector", ["fsmonitor", "post-commit hook"])
def test_ptscaffold_git_runs_no_hook_or_fsmonitor_even_when_trusted(tmp_path, vector):
    """With --trust the planted repository stays (the user chose it), but ptscaffold's own
    init/add/commit still runs none of its commands."""
    marker = tmp_path / "ran"
    files, executable = _vectors(marker)[vector]
    template = _planting_template(tmp_path / "tpl", files, executable)
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template), "--trust")
    assert result.exit_code == 0, result.stderr
    assert git(dest, "rev-list", "--count", "HEAD").strip() == "1"
    assert not marker.exists()


# --- destinations and templates that cannot work ----------------------------------------------


def _one_line_refusal(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr
    return result.stderr


@pytest.mark.parametrize("target", ["empty folder", "dangling"])
def test_destination_that_is_a_symlink_is_refused(tmp_path, target):
    real = tmp_path / "real"
    if target == "empty folder":
        real.mkdir()
    link = tmp_path / "proj"
    link.symlink_to(real)
    message = _one_line_refusal(invoke("new", str(link), "--defaults"), 1)
    assert "symbolic link" in message
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert (not real.exists()) if target == "dangling" else list(real.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["home", "proj", *(
        ["real"] if target == "empty folder" else [])])  # fmt: skip


def test_a_name_too_long_for_the_file_system_is_a_usage_error(tmp_path):
    message = _one_line_refusal(invoke("new", str(tmp_path / "a" / ("x" * 300)), "--defaults"), 2)
    assert "300 bytes long" in message and "at most" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_the_longest_valid_folder_name_works_and_leaves_nothing_beside_it(tmp_path):
    name = "p" * 250  # fits; `.<name>.<random>.ptscaffold` would not
    dest = tmp_path / "a" / "b" / name
    result = invoke("new", str(dest), "--defaults", "--no-git", "--data", "project_name=long")
    assert result.exit_code == 0, result.stderr
    assert (dest / ".copier-answers.yml").is_file()
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == [name]


def test_a_failure_leaves_no_parent_folder_behind(tmp_path, monkeypatch):
    import copier._main

    def broken(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(copier._main.Worker, "_render_file", broken)
    dest = tmp_path / "a" / "b" / ("p" * 250)
    result = invoke("new", str(dest), "--defaults", "--data", "project_name=long")
    assert "No space left on device" in _one_line_refusal(result, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_template_folder_without_copier_yml_is_refused(tmp_path):
    folder = tmp_path / "not-a-template"
    folder.mkdir()
    (folder / "secrets.txt").write_text("not for a project\n")
    dest = tmp_path / "proj"
    message = _one_line_refusal(
        invoke("new", str(dest), "--defaults", "--template", str(folder)), 2
    )
    assert "no copier.yml" in message
    assert not dest.exists()


def test_template_whose_symlink_clashes_with_a_folder_is_one_line(tmp_path):
    template = copy_template(tmp_path / "tpl")
    config = template / "copier.yml"
    config.write_text(config.read_text() + "\n_preserve_symlinks: true\n")
    (template / "template" / "clash").mkdir()
    (template / "template" / "clash" / "f.txt").write_text("x\n")
    (template / "template" / "{{ 'clash' }}").symlink_to("README.md.jinja")
    dest = tmp_path / "proj"
    message = _one_line_refusal(
        invoke("new", str(dest), "--defaults", "--template", str(template)), 1
    )
    assert "could not be rendered" in message and "symlink" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "tpl"]


def _ptscaffold(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ptscaffold", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# Round by round, how much later the second of two racing `new` starts, and whether they make
# a git repository. 0.2.0 had both succeed in most rounds without git (the second one waited
# for the template cache while the first one rendered, then found its project in place), and
# in some with git (the first one's commit gave the second one more time).
RACE_ROUNDS = ((0, False), (0, True), (0.05, False), (0, True), (0, False), (0.1, True))


@pytest.mark.skipif(sys.platform == "win32", reason="the folder lock is POSIX flock")
def test_two_new_into_one_new_folder_at_once_exactly_one_succeeds(tmp_path):
    for round_, (delay, with_git) in enumerate(RACE_ROUNDS):
        parent = tmp_path / f"round-{round_}"
        parent.mkdir()
        dest = parent / "proj"
        command = ("new", str(dest), "--defaults", *(() if with_git else ("--no-git",)))
        racing = [_ptscaffold(*command)]
        time.sleep(delay)
        racing.append(_ptscaffold(*command))
        errs = [proc.communicate(timeout=300)[1] for proc in racing]
        codes = [proc.returncode for proc in racing]
        assert sorted(codes) == [0, 1], (round_, codes, errs)
        refused = errs[codes.index(1)]
        assert refused.startswith("error: ") and len(refused.strip().splitlines()) == 1, refused
        assert errs[codes.index(0)] == "", errs  # no "kept ... existing file(s)", no note
        assert [p.name for p in parent.iterdir()] == ["proj"], "no staging folder left"
        if with_git:
            assert git(dest, "rev-list", "--count", "HEAD").strip() == "1"
        else:
            assert not (dest / ".git").exists()


def _staging_appears(parent: Path, proc: subprocess.Popen[str]) -> Path:
    """The staging folder `new` renders into, once it exists (the test fails if it never does)."""
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        found = [p for p in parent.iterdir() if p.name.startswith(".ptscaffold-")]
        if found:
            return found[0]
        time.sleep(0.002)
    pytest.fail("the command ended before its staging folder was seen")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_new_cleans_up_as_ctrl_c_does(tmp_path):
    proc = _ptscaffold("new", str(tmp_path / "proj"), "--defaults")
    _staging_appears(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


# The moments a folder exists and `new` does not yet hold its name: a signal there left it
# behind (the SIGTERM test above met the staging one once, in CI).
FOLDER_MADE = ("_made", "_make_staging")


@pytest.mark.parametrize("maker", FOLDER_MADE)
@pytest.mark.parametrize("signum", _interrupts.STOPPING, ids=lambda s: signal.Signals(s).name)
def test_a_signal_as_a_folder_is_made_leaves_nothing(tmp_path, monkeypatch, maker, signum):
    from ptscaffold import _new

    made = getattr(_new, maker)

    def signalled_as_it_returns(*args):
        result = made(*args)
        assert (tmp_path / "proj").is_dir()
        signal.raise_signal(signum)  # a real signal, to the real handlers of `new`
        return result

    monkeypatch.setattr(_new, maker, signalled_as_it_returns)
    result = invoke("new", str(tmp_path / "proj"), "--defaults")
    assert result.exit_code == 128 + signum, result.stderr
    assert "interrupted" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_the_next_new_removes_the_staging_folder_of_a_killed_one(tmp_path):
    proc = _ptscaffold("new", str(tmp_path / "proj"), "--defaults")
    staging = _staging_appears(tmp_path, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=120)
    assert staging.is_dir(), "a killed process cleans up nothing"
    # Look-alikes that must stay: a live process's staging (this one's), and a link to a
    # folder of the user's
    alive = tmp_path / f".ptscaffold-{os.getpid()}-alive"
    (alive / "proj").mkdir(parents=True)
    users = tmp_path / "users"
    (users / "keep").mkdir(parents=True)
    link = tmp_path / f".ptscaffold-{proc.pid}-link"
    link.symlink_to(users, target_is_directory=True)

    assert _ptscaffold("new", str(tmp_path / "next"), "--defaults", "-q").wait(timeout=300) == 0
    assert not staging.exists()
    assert (alive / "proj").is_dir() and link.is_symlink() and (users / "keep").is_dir()
    assert list((tmp_path / "proj").iterdir()) == []  # the killed one's claim, empty
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["home", "proj", "next", "users", alive.name, link.name]
    )


@pytest.mark.parametrize("delay", [0.3, 0.5, 0.7, 1.0])
def test_ctrl_c_in_the_first_second_prints_interrupted_and_exits_130(tmp_path, delay):
    import signal
    import time

    dest = tmp_path / "proj"
    proc = _ptscaffold("new", str(dest), "--defaults")
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:  # finished before the signal: nothing to check
        pytest.skip("the command finished within the delay")
    # 130, or death by the SIGINT itself (-2), which a shell reports as 130 too. A loaded run saw
    # -2 once at the 0.5 s delay, after "interrupted" was printed: the interpreter, not the exit
    # code ptscaffold chose, ended that process
    assert proc.returncode in (130, -signal.SIGINT), err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "interrupted" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]
