"""The parts of copier's private API that ptscaffold relies on, imported here alone and checked
once, at import.

Copier documents `run_copy` and `run_update`; ptscaffold reads the questions as copier reads
them and sees every file before copier writes it, through copier's internals: its `Worker`
(the methods ptscaffold overrides or calls), `Question`, `AnswersMap`, `Template` and
`MISSING`. A copier release that renames one of them would otherwise go unnoticed: copier
would stop calling ptscaffold's `_render_allowed`, and an update would lose its protection of
the user's untracked files. So `check` runs on import: a name gone, a method whose parameters
changed, or an overridden method that copier no longer calls, stops ptscaffold with one line
naming the installed copier (CopierIncompatible).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version

from .errors import CopierIncompatible

# The copier releases ptscaffold is tested with: pyproject.toml's pin, whose lowest release
# tests/test_copier_versions.py runs (the rest of the suite runs the highest).
COPIER_RANGE = ">=9.15,<9.20"

# What ptscaffold uses, by class: an attribute or dataclass field, and for the methods it
# overrides or calls, their parameters (None: only that it exists).
REQUIRED: dict[str, dict[str, tuple[str, ...] | None]] = {
    "Worker": {
        "_ask": ("self",),
        "_render_allowed": (
            "self", "dst_relpath", "is_dir", "is_symlink", "expected_contents", "expected_mode"
        ),
        "_render_context": ("self",),
        "run_copy": ("self",),
        "run_update": ("self",),
        "subproject": None,
        "template": None,
        "jinja_env": None,
        "settings": None,
    },
    "Question": {
        "_formatted_choices": None,
        # the fields ptscaffold constructs one with
        "var_name": None,
        "answers": None,
        "context": None,
        "jinja_env": None,
        "settings": None,
        "get_when": ("self",),
        "get_default": ("self",),
        "get_type_name": ("self",),
        "parse_answer": None,
        "cast_answer": None,
        "render_value": None,
    },
    "AnswersMap": {"hide": ("self", "key"), "combined": None},
    "Template": {"questions_data": None, "config_data": None, "envops": None, "vcs": None},
}  # fmt: skip
# Methods ptscaffold overrides: copier's own code must still call them.
CALLED = {"Worker": ("_ask", "_render_allowed")}


def copier_version() -> str:
    try:
        return version("copier")
    except PackageNotFoundError:
        return "(version unknown)"


def _incompatible(problem: str) -> CopierIncompatible:
    return CopierIncompatible(
        f"ptscaffold does not work with the installed copier {copier_version()}: {problem}; "
        f"install a copier it supports: pip install 'copier{COPIER_RANGE}'"
    )


def _parameters(member: object) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(member).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def problems(classes: Mapping[str, type]) -> list[str]:
    """What of REQUIRED and CALLED the `classes` (copier's, by name) lack, one phrase each."""
    found = []
    for name, members in REQUIRED.items():
        cls = classes[name]
        for member, wanted in members.items():
            try:
                value = inspect.getattr_static(cls, member)
            except AttributeError:
                if member not in getattr(cls, "__dataclass_fields__", {}):  # a field: no default
                    found.append(f"{name}.{member} is gone")
                continue
            if wanted is not None and _parameters(value) != wanted:
                found.append(
                    f"{name}.{member} takes ({', '.join(_parameters(value) or ('?',))}), "
                    f"not ({', '.join(wanted)})"
                )
    for name, methods in CALLED.items():
        try:
            source = inspect.getsource(classes[name])
        except (OSError, TypeError):  # no source installed: nothing to read
            continue
        found += [
            f"{name} no longer calls {method}"
            for method in methods
            if f"self.{method}(" not in source
        ]
    return found


def check(classes: Mapping[str, type]) -> None:
    """Raise CopierIncompatible, one line, when `classes` lack what ptscaffold relies on."""
    found = problems(classes)
    if found:
        raise _incompatible("; ".join(found))


try:
    from copier._main import Worker
    from copier._template import Template
    from copier._types import MISSING
    from copier._user_data import AnswersMap, Question
except ImportError as exc:
    raise _incompatible(f"cannot import {exc.name or exc}") from None

CLASSES: dict[str, type] = {
    "Worker": Worker,
    "Question": Question,
    "AnswersMap": AnswersMap,
    "Template": Template,
}
check(CLASSES)

__all__ = ["MISSING", "AnswersMap", "Question", "Template", "Worker", "check", "problems"]
