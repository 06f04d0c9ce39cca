"""Where the bundled template lives (its questions are read by `_questions`)."""

from __future__ import annotations

from pathlib import Path

# `_src_path` recorded in projects made from the bundled template. Git is redirected from it
# to a local repository (see `_cache.py`), so nothing is ever fetched from this address.
CANONICAL_URL = "https://github.com/ptscaffold/ptscaffold.git"

# What a template version consists of: these paths, relative to the template root.
TEMPLATE_PATHS = ("copier.yml", "template", "hooks")

_PACKAGE_DIR = Path(__file__).resolve().parent


def template_root() -> Path:
    """Folder holding copier.yml, template/ and hooks/ of the installed ptscaffold.

    A wheel carries them as `ptscaffold/_template/`; an editable install or a checkout
    reads them from the repository root (two levels above `generator/ptscaffold/`).
    """
    packaged = _PACKAGE_DIR / "_template"
    if (packaged / "copier.yml").is_file():
        return packaged
    checkout = _PACKAGE_DIR.parent.parent
    if (checkout / "copier.yml").is_file():
        return checkout
    raise FileNotFoundError(f"the bundled template is missing (looked in {packaged})")


def history_bundle() -> Path | None:
    """Git bundle of earlier releases' template versions shipped in the wheel, if any."""
    path = _PACKAGE_DIR / "_history.bundle"
    return path if path.is_file() else None


def post_gen_hook() -> Path:
    return template_root() / "hooks" / "post_gen.py"


def template_version(root: Path | None = None) -> str:
    """`template_version` of copier.yml (of the bundled template unless `root` is given)."""
    from ._questions import Questionnaire

    return str(Questionnaire(root or template_root()).questions["template_version"].default)
