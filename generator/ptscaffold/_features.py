"""`features`: what each question of copier.yml renders, read from copier.yml itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _questions


@dataclass(frozen=True)
class Feature:
    """One question: its name, type, valid choices, default and help text."""

    name: str
    type: str
    choices: list[Any]
    default: Any
    help: str
    when: str | None  # the condition under which it is asked, None when always


def features() -> list[Feature]:
    """Every question of the bundled template, in copier.yml order."""
    result = []
    for q in _questions.bundled().asked.values():
        choices = list(q.choices.values()) if q.choices else []
        result.append(Feature(q.name, q.type, choices, q.default, q.help, q.condition))
    return result


def _show_default(value: Any) -> str:
    if value is None:
        return "(required)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and "{{" in value:
        return "(derived)"
    return str(value)


def table(items: list[Feature]) -> str:
    """Plain-text table: QUESTION, CHOICES, DEFAULT, RENDERS (help, and when it is asked)."""
    rows = [("QUESTION", "CHOICES", "DEFAULT", "RENDERS")]
    for f in items:
        choices = ", ".join(_show_default(c) for c in f.choices) if f.choices else f.type
        renders = f.help + (f" (only when {f.when})" if f.when else "")
        rows.append((f.name, choices, _show_default(f.default), renders))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(r[:3], widths, strict=True))
        + "  "
        + r[3]
        for r in rows
    )
