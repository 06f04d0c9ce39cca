"""Where the bundled template lives (its questions are read by `_questions`)."""

from __future__ import annotations

from pathlib import Path

# `_src_path` recorded in projects made from the bundled template. Copier hands git the URL
# without its `git+` prefix, and git serves `ptscaffold://` through the `git-remote-ptscaffold`
# helper that ptscaffold installs (`_remote.py`): the local template store, no network, so a
# plain `copier update` works. ptscaffold's own commands redirect it there directly.
CANONICAL_URL = "git+ptscaffold://template"
GIT_URL = CANONICAL_URL.removeprefix("git+")
# `_src_path` of projects made by ptscaffold 0.1.0 (a placeholder address, never fetched);
# `update` records CANONICAL_URL in their place
LEGACY_URLS = ("https://github.com/ptscaffold/ptscaffold.git",)

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
    """Git bundle of every earlier release's template (kept in the repository: `_history.py`)."""
    path = _PACKAGE_DIR / "_releases.bundle"
    return path if path.is_file() else None


def post_gen_hook() -> Path:
    return template_root() / "hooks" / "post_gen.py"
