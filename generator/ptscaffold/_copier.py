"""How ptscaffold runs copier, and the one place where copier's and git's exceptions become
one-line ptscaffold errors (recognised by their types, never by their message text)."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from copier.errors import (
    CopierError,
    InteractiveSessionError,
    InvalidTypeError,
    UnsafeTemplateError,
)
from jinja2 import TemplateError

from . import _git
from ._copier_api import Worker
from .errors import AnswersError, PtscaffoldError

NO_TTY = (
    "no terminal to ask the questions on: pass --defaults to accept the defaults, "
    "and/or --data KEY=VALUE / --data-file FILE to give answers"
)


@contextlib.contextmanager
def safe_git() -> Iterator[None]:
    """Copier's git calls (through plumbum, which copied os.environ at import) made safe."""
    from plumbum import local

    with local.env(**_git.safe_config(local.env)):
        yield


@dataclasses.dataclass(frozen=True)
class Render:
    """What copier is about to write at `relpath` in `root` (the folder it renders into,
    absolute): a file's bytes, a link's target, or a folder."""

    root: Path
    relpath: Path
    content: bytes | Path
    mode: int | None
    is_dir: bool
    is_symlink: bool


class Watcher(Protocol):
    def before_render(self, render: Render, allowed: bool) -> bool:
        """Called before copier writes anything; returns whether copier writes it."""
        ...


# The watcher of the copier run in progress (`watching`), if any.
_WATCHER: contextvars.ContextVar[Watcher | None] = contextvars.ContextVar("watcher", default=None)


@contextlib.contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """Show `watcher` every path copier renders in the block (into every folder: copier also
    renders into temporary ones), before it is written."""
    token = _WATCHER.set(watcher)
    try:
        yield
    finally:
        _WATCHER.reset(token)


class PtscaffoldWorker(Worker):
    """copier's Worker; a failure while asking is an answer's fault (exit 2), and a watcher
    sees every path before it is written."""

    def _ask(self) -> None:
        try:
            super()._ask()
        except (ValueError, InvalidTypeError) as exc:  # a bad answer typed at a prompt
            raise AnswersError(one_line(str(exc))) from exc

    def _render_allowed(
        self,
        dst_relpath: Path,
        is_dir: bool = False,
        is_symlink: bool = False,
        expected_contents: bytes | Path = b"",
        expected_mode: int | None = None,
    ) -> bool:
        # copier asks this before it writes each file, link and folder
        allowed = super()._render_allowed(
            dst_relpath, is_dir, is_symlink, expected_contents, expected_mode
        )
        watcher = _WATCHER.get()
        if watcher is None:
            return allowed
        root = Path(os.path.abspath(self.subproject.local_abspath))
        render = Render(root, dst_relpath, expected_contents, expected_mode, is_dir, is_symlink)
        return watcher.before_render(render, allowed)


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
        raise PtscaffoldError(
            f"template {src} is not trusted and uses tasks, migrations or Jinja extensions, "
            "which run commands on this machine; they do not run unless you pass --trust"
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
    except CopierError as exc:
        raise PtscaffoldError(one_line(str(exc))) from exc
    except ValueError as exc:  # not while asking (see PtscaffoldWorker): an unknown ref, say
        raise PtscaffoldError(f"template {src}: {one_line(str(exc))}") from exc
    except OSError as exc:  # a full disk, a permission: the files, not the template
        where = f" ({exc.filename})" if exc.filename else ""
        raise PtscaffoldError(f"cannot write the files{where}: {exc.strerror or exc}") from exc
    except AssertionError as exc:  # copier's own consistency checks while rendering
        raise PtscaffoldError(
            f"the template {src} could not be rendered: copier stopped on an internal check "
            "(two template paths that render to one name, such as a symlink and a folder, "
            "cause this)"
        ) from exc
    except TemplateError as exc:
        where = f" ({exc.filename}, line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        raise PtscaffoldError(
            f"the template {src} failed to render{where}: {type(exc).__name__}: "
            f"{one_line(str(exc))[:300]}"
        ) from exc


def render_message(worker: Worker, message: str, dest: Path) -> str:
    """Render `_message_after_copy` with the final destination (copier saw a temporary one)."""
    if not message:
        return ""
    context = {
        **worker._render_context(),
        "_copier_conf": {"dst_path": str(dest)},
        "_folder_name": dest.name,
    }
    try:
        return worker.jinja_env.from_string(message).render(**context)
    except Exception:  # a message must never break a finished project
        return ""


def run(**kwargs: Any) -> Worker:
    """`copier.run_copy` / `run_update` with ptscaffold's Worker: `run("copy", ...)`."""
    operation = kwargs.pop("operation")
    with safe_git(), PtscaffoldWorker(**kwargs) as worker:
        getattr(worker, f"run_{operation}")()
    return worker
