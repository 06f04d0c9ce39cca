"""Where the bundled template lives, and what its copier.yml says."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

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


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Parsed copier.yml (of the bundled template unless `path` is given). Do not mutate."""
    return _load_config(Path(path or template_root() / "copier.yml").absolute())


@functools.cache
def _load_config(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a mapping")
    return data


def template_version(config: dict[str, Any] | None = None) -> str:
    config = load_config() if config is None else config
    return str(config["template_version"]["default"])


@dataclass(frozen=True)
class Question:
    """One question of copier.yml, as far as ptscaffold needs to know it."""

    name: str
    type: str
    help: str
    default: Any
    choices: dict[str, Any] | None  # label -> value, None when free-form
    when: Any  # True, or a Jinja string deciding whether the question applies

    @property
    def choice_values(self) -> list[Any]:
        return list(self.choices.values()) if self.choices else []


def _is_computed(spec: dict[str, Any]) -> bool:
    return spec.get("when") is False or str(spec.get("when")).strip().lower() == "false"


def questions(config: dict[str, Any] | None = None) -> dict[str, Question]:
    """The questions a user answers, in copier.yml order.

    Skips `_*` settings and computed values (`when: false`), which are never asked.
    """
    config = load_config() if config is None else config
    result: dict[str, Question] = {}
    for name, spec in config.items():
        if name.startswith("_"):
            continue
        if not isinstance(spec, dict):  # shorthand `name: default`
            spec = {"default": spec, "type": _infer_type(spec)}
        if _is_computed(spec):
            continue
        raw_choices = spec.get("choices")
        if isinstance(raw_choices, dict):
            choices = {
                str(k): (v["value"] if isinstance(v, dict) else v) for k, v in raw_choices.items()
            }
        elif isinstance(raw_choices, list):
            choices = {str(c): c for c in raw_choices}
        else:
            choices = None
        result[name] = Question(
            name=name,
            type=str(spec.get("type") or _infer_type(spec.get("default"))),
            help=str(spec.get("help") or "").strip(),
            default=spec.get("default"),
            choices=choices,
            when=spec.get("when", True),
        )
    return result


def computed_names(config: dict[str, Any] | None = None) -> set[str]:
    config = load_config() if config is None else config
    return {
        name
        for name, spec in config.items()
        if not name.startswith("_") and isinstance(spec, dict) and _is_computed(spec)
    }


def _infer_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"
