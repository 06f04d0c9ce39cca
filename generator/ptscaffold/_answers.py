"""Answers given on the command line or in a file, checked against copier.yml before rendering.

Copier validates choices and validators too, but it casts `compile=maybe` to True and
silently renders answers to questions whose `when` is false. These checks catch that, and
word every refusal as one line that names the question.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from jinja2 import TemplateError
from jinja2.sandbox import SandboxedEnvironment

from ._template import Question
from .errors import AnswersError

_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


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


def coerce(question: Question, value: Any) -> Any:
    """Cast `value` to the question's type, or refuse with the reason."""
    kind = question.type
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise AnswersError(f"{question.name} expects true or false, got {value!r}")
    if kind in ("int", "float"):
        cast = int if kind == "int" else float
        if isinstance(value, bool):
            raise AnswersError(f"{question.name} expects a number ({kind}), got {value!r}")
        try:
            return cast(value)
        except (TypeError, ValueError):
            raise AnswersError(
                f"{question.name} expects a number ({kind}), got {value!r}"
            ) from None
    if kind == "str":
        if isinstance(value, (dict, list)) or value is None:
            raise AnswersError(f"{question.name} expects text, got {value!r}")
        return value if isinstance(value, str) else str(value)
    return value  # yaml, json, path: copier parses these itself


def validate(
    data: Mapping[str, Any],
    questions: Mapping[str, Question],
    computed: Iterable[str] = (),
) -> dict[str, Any]:
    """Check names, types and choices of `data`; return the answers cast to their types."""
    computed = set(computed)
    result: dict[str, Any] = {}
    for key, value in data.items():
        if key in computed:
            raise AnswersError(f"{key} is computed by the template and cannot be set")
        question = questions.get(key)
        if question is None:
            close = (
                difflib.get_close_matches(key, list(questions), n=1, cutoff=0.6)
                or sorted(
                    (q for q in questions if key.startswith(q) or q.startswith(key)), key=len
                )[-1:]
            )
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(questions)
            raise AnswersError(f"unknown question {key!r}{hint} (questions: {known})")
        answer = coerce(question, value)
        if question.choices is not None:
            valid = [coerce(question, v) for v in question.choice_values]
            if answer not in valid:
                listed = ", ".join(_show(v) for v in valid)
                raise AnswersError(
                    f"{key}={_show(answer)} is not a valid choice; choose one of: {listed}"
                )
        result[key] = answer
    return result


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


# --- answers that the template would ignore -------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _jinja_env(envops: Mapping[str, Any] | None = None) -> SandboxedEnvironment:
    return SandboxedEnvironment(
        extensions=["jinja2_ansible_filters.AnsibleCoreFiltersExtension"], **dict(envops or {})
    )


def _truthy(rendered: str) -> bool:
    text = rendered.strip().lower()
    return text not in ("", "false", "no", "n", "off", "0", "none", "null", "~")


def when_refusal(
    key: str, question: Question, answers: Mapping[str, Any], env: SandboxedEnvironment
) -> str | None:
    """Why answering `key` makes no sense given `answers`, or None when it applies."""
    if not isinstance(question.when, str):
        return None if question.when is not False else f"{key} cannot be set"
    try:
        applies = _truthy(env.from_string(question.when).render(**answers))
    except TemplateError:
        return None  # cannot tell here; copier decides
    if applies:
        return None
    condition = question.when.strip().removeprefix("{{").removesuffix("}}").strip()
    involved = [n for n in dict.fromkeys(_NAME.findall(condition)) if n in answers and n != key]
    given = ", ".join(f"{n}={_show(answers[n])}" for n in involved)
    suffix = f", but {given}" if given else ""
    return f"{key}={_show(answers[key])} cannot be used: it applies only when {condition}{suffix}"


def check_applicable(
    data: Mapping[str, Any],
    questions: Mapping[str, Question],
    context: Mapping[str, Any],
    envops: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a combination such as `slurm=true` with `distributed=none`.

    `context` holds every answer known so far (defaults, recorded answers, `data`).
    """
    env = _jinja_env(envops)
    for key in data:
        question = questions.get(key)
        if question is None:
            continue
        reason = when_refusal(key, question, context, env)
        if reason:
            raise AnswersError(reason)


def default_context(
    questions: Mapping[str, Question],
    data: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
    envops: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Answers copier would use with --defaults: `data`, else each rendered default."""
    env = _jinja_env(envops)
    context: dict[str, Any] = dict(extra or {})
    for name, question in questions.items():
        if name in data:
            context[name] = data[name]
            continue
        default = question.default
        if isinstance(default, str) and "{" in default:
            try:
                default = env.from_string(default).render(**context)
            except TemplateError:
                continue
        if default is not None:
            try:
                context[name] = coerce(question, default)
            except AnswersError:
                context[name] = default
    return context
