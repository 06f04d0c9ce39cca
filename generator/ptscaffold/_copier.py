"""The one place where copier's and git's exceptions become one-line ptscaffold errors."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

from copier.errors import (
    CopierError,
    InteractiveSessionError,
    InvalidTypeError,
    UnsafeTemplateError,
)
from jinja2 import TemplateError

from .errors import AnswersError, PtscaffoldError

NO_TTY = (
    "no terminal to ask the questions on: pass --defaults to accept the defaults, "
    "and/or --data KEY=VALUE / --data-file FILE to give answers"
)


def one_line(text: str) -> str:
    return " ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())


def _git_failure(exc: Exception) -> str:
    stderr = getattr(exc, "stderr", "") or ""
    lines = [ln.strip() for ln in str(stderr).splitlines() if ln.strip()]
    return lines[-1] if lines else one_line(str(exc))[:200]


@contextlib.contextmanager
def translate_errors(src: str, *, offline_hint: str = "") -> Iterator[None]:
    """Re-raise copier and git failures as PtscaffoldError (KeyboardInterrupt passes through)."""
    from plumbum.commands.processes import ProcessExecutionError

    try:
        yield
    except PtscaffoldError:
        raise
    except InteractiveSessionError as exc:
        raise AnswersError(NO_TTY) from exc
    except UnsafeTemplateError as exc:
        features = re.search(r"features?: ([^.]+)\.", str(exc))
        used = features.group(1) if features else "tasks or migrations"
        raise PtscaffoldError(
            f"template {src} is not trusted and uses {used}, which run commands on this "
            "machine; they do not run unless you pass --trust"
        ) from exc
    except InvalidTypeError as exc:
        raise AnswersError(one_line(str(exc)) or "an answer has the wrong type") from exc
    except ProcessExecutionError as exc:
        hint = offline_hint or (
            "check that the template source exists and is reachable (a URL needs network)"
        )
        raise PtscaffoldError(
            f"git failed while reading the template {src}: {_git_failure(exc)}; {hint}"
        ) from exc
    except ValueError as exc:
        message = one_line(str(exc))
        match = re.match(r"Validation error for question '([^']+)': (.*)", message)
        if match:
            raise AnswersError(f"invalid {match.group(1)}: {match.group(2)}") from exc
        match = re.match(r'Question "([^"]+)" is required', message)
        if match:
            name = match.group(1)
            raise AnswersError(f"{name} has no default: pass --data {name}=VALUE") from exc
        if "Unknown revision" in message:
            raise PtscaffoldError(f"template {src}: {message}") from exc
        if isinstance(exc, CopierError):
            raise PtscaffoldError(message) from exc
        raise AnswersError(message) from exc
    except CopierError as exc:
        raise PtscaffoldError(one_line(str(exc))) from exc
    except TemplateError as exc:
        where = f" ({exc.filename}, line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        raise PtscaffoldError(
            f"the template {src} failed to render{where}: {type(exc).__name__}: "
            f"{one_line(str(exc))[:300]}"
        ) from exc


def render_message(
    message: str, answers: Mapping[str, Any], dst_path: str, envops: Mapping[str, Any]
) -> str:
    """Render `_message_after_copy` with the final destination (copier saw a temporary one)."""
    from ._answers import _jinja_env

    if not message:
        return ""
    context = dict(answers)
    context["_copier_conf"] = {"dst_path": dst_path}
    context["_folder_name"] = dst_path.rstrip("/").rsplit("/", 1)[-1]
    try:
        return _jinja_env(envops).from_string(message).render(**context)
    except Exception:  # a message must never break a finished project
        return ""
