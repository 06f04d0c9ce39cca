"""What an untrusted template may render, and what runs before trust is decided.

An untrusted template (`--template`, no `--trust`) may not plant a git repository anywhere in
the project, in any layout git opens (a bare git directory, at any depth, the top included),
on `new` or on `update`; and its Jinja extensions are not imported before it is refused.
Each attack is real: real templates, real copier, real git, and a process whose sys.path holds
the template's folder, as a user's does who runs ptscaffold there.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
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

# The two questions every ptscaffold template asks (update refuses a project without them),
# and an answers file, so that a project made from a git repository of it can be updated.
CONFIG = """\
_subdirectory: template
_preserve_symlinks: true
project_name:
  type: str
  default: demo
package_name:
  type: str
  default: demo
"""
BASE_FILES = {
    "template/README.md": "demo\n",
    "template/{{ _copier_conf.answers_file }}.jinja": "{{ _copier_answers | to_nice_yaml }}\n",
}
HEAD = "ref: refs/heads/main\n"


def _write(root: Path, files: Mapping[str, str], links: Mapping[str, str] | None = None) -> Path:
    """Write `files` (path -> text) and symlinks `links` (path -> target) under `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel, target in (links or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
    return root


def _template(root: Path) -> Path:
    return _write(root, {"copier.yml": CONFIG, **BASE_FILES})


def _config(marker: Path, worktree: str) -> str:
    """A git config whose fsmonitor, which git runs on `git diff` or `git status`, touches
    `marker`; `worktree` makes the folder's parent (or the folder) its work tree."""
    return (
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f'\tworktree = {worktree}\n\tfsmonitor = "touch {marker}; true"\n'
    )


def _layouts(marker: Path) -> dict[str, tuple[dict[str, str], dict[str, str], str]]:
    """Each layout that git opens as a repository with no `.git` in sight: (files, symlinks,
    the folder git opens), paths relative to the rendered project."""
    bare = {"src/objects/info/.keep": "", "src/refs/heads/.keep": ""}
    return {
        "bare subfolder": (
            {"src/HEAD": HEAD, "src/config": _config(marker, ".."), **bare}, {}, "src"
        ),
        "bare top folder": (
            {"HEAD": HEAD, "config": _config(marker, "."),
             "objects/info/.keep": "", "refs/heads/.keep": ""},
            {}, ".",
        ),
        "HEAD a symlink": (
            {"src/config": _config(marker, ".."), **bare}, {"src/HEAD": "refs/heads/main"}, "src"
        ),
        # objects and refs live in the folder `commondir` names
        "commondir": (
            {"src/HEAD": HEAD, "src/commondir": "../common\n",
             "common/config": _config(marker, ".."),
             "common/objects/info/.keep": "", "common/refs/heads/.keep": ""},
            {}, "src",
        ),
    }  # fmt: skip


def _planting_template(root: Path, marker: Path, layout: str) -> tuple[Path, str]:
    files, links, folder = _layouts(marker)[layout]
    template = _template(root)
    _write(template / "template", files, links)
    return template, folder


LAYOUTS = list(_layouts(Path("m")))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_untrusted_template_may_not_plant_a_bare_repository(tmp_path, layout):
    marker = tmp_path / "ran"
    template, folder = _planting_template(tmp_path / "tpl", marker, layout)
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template))
    assert result.exit_code == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--trust" in result.stderr and "git directory" in result.stderr
    assert ("top folder" if folder == "." else f"{folder}/") in result.stderr
    # nothing written: no project, no staging folder beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "tpl"]
    assert not marker.exists()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_git_opens_each_planted_layout_of_a_trusted_template(tmp_path, layout):
    """The control: with --trust the layout is rendered, and git takes its folder for a
    repository with the template's config (its fsmonitor command is what git would run)."""
    marker = tmp_path / "ran"
    template, folder = _planting_template(tmp_path / "tpl", marker, layout)
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template), "--trust",
                    "--no-git")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    opened = dest / folder
    assert Path(git(opened, "rev-parse", "--absolute-git-dir").strip()) == opened.resolve()
    assert git(opened, "config", "core.fsmonitor").strip() == f"touch {marker}; true"


def test_trusted_bare_subfolder_runs_its_command_on_the_users_git_diff(tmp_path):
    """The issue's attack end to end, trusted: committed by ptscaffold (which runs nothing),
    then the user's `git diff` inside src/ runs the template's command."""
    marker = tmp_path / "ran"
    template, _ = _planting_template(tmp_path / "tpl", marker, "bare subfolder")
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", "--template", str(template), "--trust")
    assert result.exit_code == 0, result.stderr
    assert git(dest, "rev-list", "--count", "HEAD").strip() == "1"
    assert not marker.exists()
    subprocess.run(["git", "diff"], cwd=dest / "src", capture_output=True, check=False)
    assert marker.exists()


# --- update ------------------------------------------------------------------------------------


def _template_repository(root: Path) -> Path:
    """A git repository of the small template, tagged v1.0.0."""
    repo = _template(root)
    git(repo, "init", "-q")
    commit_all(repo, "v1")
    git(repo, "tag", "v1.0.0")
    return repo


def _release(repo: Path, files: Mapping[str, str], version: str = "2.0.0") -> None:
    _write(repo, files)
    commit_all(repo, f"v{version}")
    git(repo, "tag", f"v{version}")


def test_untrusted_update_may_not_plant_a_bare_repository(tmp_path):
    """Needs `_update.update` to call `_planted.refuse_planted` on what the update wrote."""
    marker = tmp_path / "ran"
    repo = _template_repository(tmp_path / "tpl-repo")
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    files, _, _ = _layouts(marker)["bare subfolder"]
    _release(repo, {f"template/{rel}": text for rel, text in files.items()})
    before = tree_state(project)
    result = invoke("update", str(project), "--quiet")
    assert result.exit_code == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "src/" in result.stderr and "--trust" in result.stderr
    assert "exactly as it was" in result.stderr
    assert tree_state(project) == before
    assert not (project / "src").exists()
    # The control: trusted, the same update plants it, and the user's git diff runs it.
    assert invoke("update", str(project), "--trust").exit_code == 0
    subprocess.run(["git", "diff"], cwd=project / "src", capture_output=True, check=False)
    assert marker.exists()


# --- Jinja extensions -----------------------------------------------------------------------

EXTENSION = """\
from pathlib import Path

from jinja2.ext import Extension

Path({marker!r}).touch()


class Ext(Extension):
    pass
"""
USES_EXTENSION = "_jinja_extensions:\n  - evilext:Ext\n"
# Each way copier.yml can declare the extension: plain, as copier.yaml, or `!include`d
DECLARATIONS = {
    "copier.yml": {"copier.yml": CONFIG + USES_EXTENSION},
    "copier.yaml": {"copier.yaml": CONFIG + USES_EXTENSION},
    "!include": {"copier.yml": f"{CONFIG}---\n!include more.yml\n", "more.yml": USES_EXTENSION},
}


def _extension_template(root: Path, marker: Path, declaration: str) -> Path:
    """A template whose evilext.py, beside its copier.yml, touches `marker` when imported."""
    files = {**BASE_FILES, **DECLARATIONS[declaration]}
    return _write(root, {**files, "evilext.py": EXTENSION.format(marker=str(marker))})


def _ptscaffold(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m ptscaffold ARGS` in `cwd`, which Python puts first on sys.path: a module in
    `cwd` is importable, as for a user who runs ptscaffold in the template's folder."""
    command = [sys.executable, "-m", "ptscaffold", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("declaration", list(DECLARATIONS))
def test_untrusted_jinja_extension_is_never_imported(tmp_path, declaration):
    marker = tmp_path / "imported"
    template = _extension_template(tmp_path / "tpl", marker, declaration)
    dest = tmp_path / "proj"
    proc = _ptscaffold(template, "new", str(dest), "--template", ".", "--defaults", "--no-git")
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "not trusted" in proc.stderr and "--trust" in proc.stderr
    assert not marker.exists()
    assert not dest.exists()


def test_trusted_jinja_extension_is_imported(tmp_path):
    """The control: with --trust the same extension loads, so the marker tells."""
    marker = tmp_path / "imported"
    template = _extension_template(tmp_path / "tpl", marker, "copier.yml")
    dest = tmp_path / "proj"
    args = ("new", str(dest), "--template", ".", "--defaults", "--no-git", "--trust")
    proc = _ptscaffold(template, *args)
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()


def test_untrusted_update_never_imports_a_new_jinja_extension(tmp_path):
    """Copier clones a git template and checks trust before it builds its Jinja environment:
    a release that adds an extension is refused on update, the module never imported."""
    marker = tmp_path / "imported"
    repo = _template_repository(tmp_path / "tpl-repo")
    project = ptscaffold.new(tmp_path / "proj", defaults=True, template=str(repo), quiet=True)
    extension = {"evilext.py": EXTENSION.format(marker=str(marker))}
    _release(repo, {**extension, "copier.yml": CONFIG + USES_EXTENSION})
    before = tree_state(project)
    proc = _ptscaffold(repo, "update", str(project))
    assert proc.returncode == 1, proc.stderr
    assert "not trusted" in proc.stderr and "--trust" in proc.stderr
    assert not marker.exists()
    assert tree_state(project) == before
