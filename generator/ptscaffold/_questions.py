"""The template's questions, read through copier's own objects: the one reader ptscaffold has.

Copier decides what a question means: `copier._template.Template` parses copier.yml, and
`copier._user_data.Question` renders defaults, `when`, choices and validators with the Jinja
environment of a `copier._main.Worker` and an `AnswersMap`, exactly as `copier copy` does.
This module walks the questions in the same order as copier's own questionnaire and adds
only what copier lacks:

- an unknown key gets "did you mean", and a computed value cannot be set;
- a bool answer must be a boolean word (copier reads `compile=maybe` as true);
- an answer to a question that does not apply (its `when` is false) is refused, where copier
  would render it and silently leave it out of the answers file;
- every refusal is one `AnswersError` line naming the question;
- a template nobody trusted that has Jinja extensions or tasks is refused before
  copier's Jinja environment, which imports the extensions, exists.

Cross-question rules belong in copier.yml as `validator`s, so plain `copier copy` users get
them too; this module runs them through copier.

The CLI (`new`, `update`, `features`) and the tests (`tests/template_matrix.py`) read questions
only through `Questionnaire`.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copier.errors import CopierError, InvalidTypeError, UnsafeTemplateError
from jinja2 import TemplateError, meta

from . import _template
from ._copier_api import MISSING, AnswersMap, Question, Template, Worker
from .errors import AnswersError

_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


class _FolderTemplate(Template):
    """A template read in place: its files as they are on disk, never cloned.

    Copier clones a template folder that is a git repository (taking its latest tag); for
    reading questions the working files are what counts, and no clone is needed.
    """

    @functools.cached_property
    def vcs(self) -> None:  # type: ignore[override]
        return None


class _ReaderWorker(Worker):
    """A copier Worker that never renders: it lends its Jinja environment and context."""

    @functools.cached_property
    def template(self) -> Template:  # type: ignore[override]
        assert self.src_path is not None
        return _FolderTemplate(url=self.src_path)


@dataclass(frozen=True)
class QuestionInfo:
    """One entry of copier.yml, as written there (defaults and `when` not rendered)."""

    name: str
    type: str
    help: str
    default: Any  # None when the question has none
    choices: dict[str, Any] | None  # label -> value; None for a free answer
    when: bool | str  # True, False, or the Jinja condition
    computed: bool  # `when: false`: never asked, never recorded

    @property
    def values(self) -> tuple[Any, ...]:
        """Every valid answer when there are finitely many (choices, or a bool), else ()."""
        if self.choices is not None:
            return tuple(self.choices.values())
        return (True, False) if self.type == "bool" else ()

    @property
    def condition(self) -> str | None:
        """The `when` condition without its braces, None when the question is always asked."""
        if not isinstance(self.when, str):
            return None
        return self.when.strip().removeprefix("{{").removesuffix("}}").strip()


@dataclass
class Walk:
    """The questionnaire walked with some answers, as copier would walk it."""

    answers: dict[str, Any]  # every answer known: given, recorded, or default
    applies: dict[str, bool]  # question -> whether copier asks it given the earlier answers
    prompted: list[str] = field(default_factory=list)  # would be asked without --defaults


# The copier.yml settings that run code on this machine when a project is made: Jinja
# extensions (imported as the questions are read) and tasks. Migrations run only on update,
# where copier refuses those that would run for an untrusted template, as it does here.
_UNSAFE_SETTINGS = ("jinja_extensions", "tasks")


def _refuse_unsafe(template: Template) -> None:
    """Raise copier's UnsafeTemplateError when `template` has Jinja extensions or tasks (its
    copier.yml read as copier reads it: `!include`s, copier.yaml)."""
    used = [name for name in _UNSAFE_SETTINGS if template.config_data.get(name)]
    if used:
        raise UnsafeTemplateError(used)


class Questionnaire:
    """The questions of the template at `root` (a folder holding copier.yml).

    `dest` is where the project goes: its name is `_folder_name`, and its answers file (if
    any) holds the answers recorded by an earlier copy, as copier reads them.

    A template not `trusted` (neither bundled nor passed with --trust) that has Jinja
    extensions or tasks is refused here, with copier's UnsafeTemplateError: copier's
    Jinja environment, which reading the questions builds, imports the extensions (running
    their code), and copier's own trust check comes only with a copy or an update.
    """

    def __init__(
        self, root: str | Path, dest: str | Path | None = None, *, trusted: bool = True
    ) -> None:
        root = Path(root)
        self._worker = _ReaderWorker(
            src_path=str(root), dst_path=Path(dest) if dest is not None else root / "project"
        )
        self.template = self._worker.template
        if not trusted:
            _refuse_unsafe(self.template)
        self._applies: dict[tuple[Any, ...], bool] = {}

    @functools.cached_property
    def questions(self) -> dict[str, QuestionInfo]:
        """Every entry of copier.yml that is not a setting, in order (computed ones too)."""
        result = {}
        for name, details in self.template.questions_data.items():
            question = self._question(name, details, AnswersMap())
            when = details.get("when", True)
            choices = None
            if question.choices:
                choices = {c.title: c.value for c in question._formatted_choices}
            default = details.get("default", MISSING)
            result[name] = QuestionInfo(
                name=name,
                type=question.type,
                help=str(details.get("help") or "").strip(),
                default=None if default is MISSING else default,
                choices=choices,
                when=when,
                computed=when is False or str(when).strip().lower() == "false",
            )
        return result

    @property
    def asked(self) -> dict[str, QuestionInfo]:
        """The questions a user answers (computed values left out)."""
        return {n: q for n, q in self.questions.items() if not q.computed}

    @property
    def envops(self) -> Mapping[str, Any]:
        return self.template.envops

    def render(self, text: str, context: Mapping[str, Any]) -> str:
        """Render `text` with copier's Jinja environment for this template."""
        return self._worker.jinja_env.from_string(text).render(**context)

    def _question(self, name: str, details: Mapping[str, Any], answers: AnswersMap) -> Question:
        # The validator is left out here: `_validate` runs it, so that its message can be
        # told apart from a bad type or choice without reading copier's message text.
        self._worker.answers = answers
        return Question(
            answers=answers,
            context=self._worker._render_context(),
            jinja_env=self._worker.jinja_env,
            settings=self._worker.settings,
            var_name=name,
            **{**details, "validator": ""},
        )

    def applies(self, name: str, answers: Mapping[str, Any]) -> bool:
        """Whether copier asks `name` when the earlier questions have `answers`."""
        when = self.questions[name].when
        if not isinstance(when, str):
            return bool(when)
        used = self._condition_names(name)
        key = (name, tuple((n, repr(answers.get(n))) for n in used))
        if key not in self._applies:
            details = self.template.questions_data[name]
            question = self._question(name, details, AnswersMap(init=dict(answers)))
            self._applies[key] = question.get_when()
        return self._applies[key]

    @functools.cache  # noqa: B019 (one Questionnaire lives as long as its template)
    def _condition_names(self, name: str) -> tuple[str, ...]:
        parsed = self._worker.jinja_env.parse(str(self.questions[name].when))
        return tuple(sorted(meta.find_undeclared_variables(parsed)))

    def check_keys(self, data: Mapping[str, Any]) -> None:
        """Refuse a key that is no question: a computed value, or a name with no question."""
        asked = self.asked
        for key in data:
            question = self.questions.get(key)
            if question is not None and question.computed:
                raise AnswersError(f"{key} is computed by the template and cannot be set")
            if question is None:
                raise AnswersError(_unknown(key, list(asked)))

    def walk(
        self,
        data: Mapping[str, Any],
        *,
        user_defaults: Mapping[str, Any] | None = None,
        last: Mapping[str, Any] | None = None,
        defaults: bool = True,
        interactive: bool = False,
    ) -> Walk:
        """Walk the questions in copier's order with `data` given (and `last` recorded).

        Every given answer is cast and checked against its choices, its copier.yml validator
        and its `when`; a question nobody answered takes its default, and is listed in
        `prompted` when copier would ask it without --defaults (`defaults=False`: a question
        with no default is then only listed there). With `interactive=True` (a
        person at a terminal) the first such question is asked for real, so the answers
        after it are not known here: for those only types and choices are checked.
        Raises AnswersError.
        """
        self.check_keys(data)
        answers = AnswersMap(
            init={k: _strict(self.questions[k], k, v) for k, v in data.items()},
            last=dict(last or {}),
            user_defaults=dict(user_defaults or {}),
        )
        walk = Walk(answers={}, applies={})
        for name, details in self.template.questions_data.items():
            question = self._question(name, details, answers)
            validator = str(details.get("validator") or "")
            self._drop_invalid_recorded(question, validator, answers)
            known = not (interactive and walk.prompted)  # every earlier answer is known
            applies = question.get_when() if known else True
            walk.applies[name] = applies
            if not applies:
                answers.hide(name)
                answers.last.pop(name, None)
            if name in answers.init:
                self._take_given(question, validator, answers, checked=known, applies=applies)
                continue
            if name in answers.last:
                continue
            if applies and not self.questions[name].computed:
                walk.prompted.append(name)
                if interactive:
                    continue
            if not known:
                continue
            default = _default(question)
            if default is MISSING:
                if applies and defaults:
                    raise AnswersError(f"{name} has no default: pass --data {name}=VALUE")
                continue
            if applies:
                self._validate(question, validator, default)
            answers.user[name] = default
        walk.answers = {k: v for k, v in answers.combined.items() if k in self.questions}
        return walk

    def _drop_invalid_recorded(
        self, question: Question, validator: str, answers: AnswersMap
    ) -> None:
        """As copier does: a recorded answer that is no longer valid is dropped."""
        name = question.var_name
        if name in answers.last:
            try:
                self._validate(question, validator, question.parse_answer(answers.last[name]))
            except (AnswersError, ValueError, CopierError):
                del answers.last[name]

    def _take_given(
        self,
        question: Question,
        validator: str,
        answers: AnswersMap,
        *,
        checked: bool,
        applies: bool,
    ) -> None:
        """The given answer, cast and (where the earlier answers are known: `checked`) checked:
        the template's own rule first, then copier's silent `when`."""
        name = question.var_name
        answer = _parse(question, answers.init[name])
        if checked:
            self._validate(question, validator, answer)
            if not applies:
                raise AnswersError(self._refusal(name, answer, answers.combined))
        answers.user[name] = answer

    def _validate(self, question: Question, validator: str, answer: Any) -> None:
        """Run the question's copier.yml validator; its rendered text is the refusal."""
        if not validator:
            return
        try:
            message = question.render_value(validator, {question.var_name: answer}).strip()
        except Exception as exc:  # copier counts a failing validator as a refusal too
            message = str(exc)
        if message:
            raise AnswersError(f"invalid {question.var_name}: {_one_line(message)}")

    def _refusal(self, name: str, answer: Any, answers: Mapping[str, Any]) -> str:
        condition = self.questions[name].condition
        if condition is None:
            return f"{name} cannot be set"
        try:
            names: tuple[str, ...] = self._condition_names(name)
        except TemplateError:
            names = ()
        involved = [n for n in names if n in answers and n != name]
        given = ", ".join(f"{n}={_show(answers[n])}" for n in involved)
        suffix = f", but {given}" if given else ""
        return f"{name}={_show(answer)} cannot be used: it applies only when {condition}{suffix}"


def _unknown(key: str, names: list[str]) -> str:
    close = (
        difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        or sorted((q for q in names if key.startswith(q) or q.startswith(key)), key=len)[-1:]
    )
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown question {key!r}{hint} (questions: {', '.join(names)})"


def _strict(question: QuestionInfo, key: str, value: Any) -> Any:
    """What copier casts too freely: a bool from any word, a number from a bool, a list to text."""
    if question.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise AnswersError(f"{key} expects true or false, got {value!r}")
    if question.type in ("int", "float") and isinstance(value, bool):
        raise AnswersError(f"{key} expects a number ({question.type}), got {value!r}")
    if question.type == "str" and (isinstance(value, (dict, list)) or value is None):
        raise AnswersError(f"{key} expects text, got {value!r}")
    return value


def _parse(question: Question, value: Any) -> Any:
    """Cast through copier, then check the choices; one line naming the question."""
    name = question.var_name
    try:
        question.cast_answer(value)
    except (InvalidTypeError, ValueError, TypeError):
        raise AnswersError(f"{name} expects {question.get_type_name()}, got {value!r}") from None
    try:
        return question.parse_answer(value)
    except ValueError:
        valid = [c.value for c in question._formatted_choices if not c.disabled]
        listed = ", ".join(_show(v) for v in valid)
        raise AnswersError(
            f"{name}={_show(value)} is not a valid choice; choose one of: {listed}"
        ) from None


def _default(question: Question) -> Any:
    """The default copier would offer (rendered from earlier answers), or MISSING."""
    try:
        return question.get_default()
    except (ValueError, CopierError) as exc:
        raise AnswersError(
            f"the default of {question.var_name} is not valid: {_one_line(str(exc))}"
        ) from exc


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())


def bundled(dest: str | Path | None = None) -> Questionnaire:
    """The questions of the template this ptscaffold ships."""
    return Questionnaire(_template.template_root(), dest)


def template_version(root: Path | None = None) -> str:
    """`template_version` of copier.yml (of the bundled template unless `root` is given)."""
    questions = Questionnaire(root or _template.template_root()).questions
    return str(questions["template_version"].default)
