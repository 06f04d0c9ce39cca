"""Answers as the user gives them: `--data KEY=VALUE` items and `--data-file` YAML.

What the answers mean is checked against the template by `_questions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .errors import AnswersError


def parse_data_items(items: Iterable[str]) -> dict[str, str]:
    """`["amp=bf16", "compile=true"]` -> `{"amp": "bf16", "compile": "true"}`."""
    data: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AnswersError(f"--data expects KEY=VALUE, got {item!r}")
        data[key.strip()] = value
    return data


def load_data_file(path: str | Path) -> dict[str, Any]:
    """Answers from a YAML file (an earlier project's .copier-answers.yml works too)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise AnswersError(f"cannot read answers file {path}: {reason}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise AnswersError(f"answers file {path} is not valid YAML{where}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise AnswersError(f"answers file {path} must be a mapping of question: answer")
    # Copier's own bookkeeping (`_src_path`, `_commit`) is not an answer.
    return {k: v for k, v in data.items() if not k.startswith("_")}
