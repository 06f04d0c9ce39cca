"""Line endings: a project edited on Windows updates line by line, not file by file."""

from __future__ import annotations

from pathlib import Path

import ptscaffold
import pytest
from ptscaffold import _template
from ptscaffold_testing import (
    commit_all,
    copy_template,
    git,
    isolated,  # noqa: F401
    ptscaffold_cache,  # noqa: F401
    set_version,
)

README_LINE = "## Quick start"  # a line of the generated README that version 2.0.0 changes


def _release(root: Path, version: str, *, attributes: bool = True) -> Path:
    copy_template(root)
    set_version(root, version)
    if not attributes:  # what a project had before .gitattributes: no normalization
        (root / "template" / ".gitattributes").unlink()
    if version == "2.0.0":
        readme = root / "template" / "README.md.jinja"
        text = readme.read_text()
        assert README_LINE in text
        readme.write_text(text.replace(README_LINE, "## Quick start (changed in 2.0.0)", 1))
    return root


def _save_with_crlf(path: Path, edit: tuple[str, str] | None = None) -> None:
    """What a Windows editor does: every line ending becomes CRLF (and maybe a line changes)."""
    text = path.read_text()
    if edit:
        text = text.replace(*edit)
    path.write_bytes(text.replace("\n", "\r\n").encode())


@pytest.mark.parametrize("autocrlf", ["false", "true"])
def test_crlf_files_update_without_whole_file_conflicts(tmp_path, monkeypatch, autocrlf):
    roots = {v: _release(tmp_path / v, v) for v in ("1.0.0", "2.0.0")}
    monkeypatch.setattr(_template, "template_root", lambda: roots["1.0.0"])
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    assert (project / ".gitattributes").is_file()
    git(project, "config", "core.autocrlf", autocrlf)
    readme = project / "README.md"
    _save_with_crlf(readme)
    _save_with_crlf(project / "src" / "proj" / "model.py", ("import torch", "import torch  # mine"))
    commit_all(project, "edited on Windows")

    monkeypatch.setattr(_template, "template_root", lambda: roots["2.0.0"])
    result = ptscaffold.update(project, quiet=True)

    assert result.conflicts == []
    updated = readme.read_bytes().replace(b"\r\n", b"\n").decode()
    assert "## Quick start (changed in 2.0.0)" in updated
    assert "import torch  # mine" in (project / "src" / "proj" / "model.py").read_text()


def test_without_the_attributes_the_same_edit_conflicts(tmp_path, monkeypatch):
    """Why .gitattributes is there: the same CRLF save conflicts on the whole file."""
    roots = {v: _release(tmp_path / v, v, attributes=False) for v in ("1.0.0", "2.0.0")}
    monkeypatch.setattr(_template, "template_root", lambda: roots["1.0.0"])
    project = ptscaffold.new(tmp_path / "proj", defaults=True, quiet=True)
    git(project, "config", "core.autocrlf", "false")
    _save_with_crlf(project / "README.md")
    commit_all(project, "edited on Windows")
    monkeypatch.setattr(_template, "template_root", lambda: roots["2.0.0"])
    assert ptscaffold.update(project, quiet=True).conflicts == ["README.md"]
