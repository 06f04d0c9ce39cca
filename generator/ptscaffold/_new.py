"""`new`: render the template into a fresh project, atomically."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import _answers, _cache, _template
from ._copier import NO_TTY, render_message, translate_errors
from .errors import AnswersError, DestinationError, PtscaffoldError

FALLBACK_NEXT_STEPS = """Next steps:

  cd {dest}
  python -m pip install -e ".[dev]"
  python -m pytest
"""


def _say(quiet: bool, text: str, *, err: bool = False) -> None:
    if not quiet and text:
        print(text, file=sys.stderr if err else sys.stdout)


def _enclosing_git_repo(path: Path) -> Path | None:
    for parent in path.parents:
        if (parent / ".git").exists():
            return parent
    return None


def _check_destination(dest: Path, force: bool) -> None:
    """Refuse a destination that cannot take a project, before anything is written."""
    if dest.exists() or dest.is_symlink():
        if not dest.is_dir():
            raise DestinationError(f"{dest} exists and is not a directory")
        if any(dest.iterdir()) and not force:
            raise DestinationError(
                f"{dest} exists and is not empty; choose another destination, or pass --force "
                "to add the project's files beside yours (none of yours is overwritten or deleted)"
            )
    existing = dest.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise DestinationError(f"cannot create {dest}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DestinationError(f"cannot create {dest}: {existing} is not writable")


def _source(template: str | None) -> tuple[str, bool]:
    """(copier source, is_bundled). Local paths become absolute: copier records them as given."""
    if template is None:
        return _template.CANONICAL_URL, True
    path = Path(template).expanduser()
    if path.exists():
        return str(path.resolve()), False
    if "://" in template or template.startswith(("git@", "gh:", "gl:")):
        return template, False
    raise PtscaffoldError(f"template {template} does not exist (give a folder, bundle or git URL)")


def _local_config(src: str) -> dict[str, Any] | None:
    path = Path(src) / "copier.yml"
    if not path.is_file():
        return None
    try:
        return _template.load_config(path)
    except Exception:  # copier reports a broken copier.yml better
        return None


def _folder_defaults(config: Mapping[str, Any] | None, folder: str) -> dict[str, Any]:
    """A project_name without a default in copier.yml defaults to the destination's name."""
    if config is None:
        return {}
    question = _template.questions(dict(config)).get("project_name")
    return {"project_name": folder} if question is not None and question.default is None else {}


def _prepare_answers(
    config: Mapping[str, Any] | None, raw: Mapping[str, Any], defaults: bool, folder: str
) -> dict[str, Any]:
    """Validate answers against copier.yml; refuse a prompt that has no terminal."""
    if config is None:
        return dict(raw)
    questions = _template.questions(dict(config))
    answers = _answers.validate(raw, questions, _template.computed_names(dict(config)))
    envops = config.get("_envops") or {}
    context = _answers.default_context(
        questions, {**_folder_defaults(config, folder), **answers}, envops=envops
    )
    if defaults or all(name in answers for name in questions):
        _answers.check_applicable(answers, questions, context, envops)
    if not defaults and not _stdin_is_tty():
        env = _answers._jinja_env(envops)
        unanswered = [
            name
            for name, question in questions.items()
            if name not in answers and _answers.when_refusal(name, question, context, env) is None
        ]
        if unanswered:
            raise AnswersError(f"{NO_TTY} (unanswered: {', '.join(unanswered)})")
    return answers


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _run_hook(project: Path) -> None:
    """Run hooks/post_gen.py in this process (it is a standalone script too)."""
    hook = _template.post_gen_hook()
    namespace: dict[str, Any] = {"__name__": "ptscaffold_post_gen", "__file__": str(hook)}
    exec(compile(hook.read_text(encoding="utf-8"), str(hook), "exec"), namespace)
    try:
        namespace["main"](project)
    except RuntimeError as exc:
        raise PtscaffoldError(f"{exc} (use --no-git to skip git)") from exc


def _merge_into(rendered: Path, dest: Path) -> list[Path]:
    """Add the rendered files that `dest` lacks; a file already there is the user's and is kept.

    Returns the kept files (relative to `dest`) whose template version was not written.
    """
    kept = []
    try:
        for path in sorted(rendered.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                continue
            relative = path.relative_to(rendered)
            target = dest / relative
            if target.exists() or target.is_symlink():
                kept.append(relative)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target, follow_symlinks=False)
    except OSError as exc:
        raise PtscaffoldError(f"cannot write the project into {dest}: {exc}") from exc
    return kept


def new(
    dest: str | os.PathLike[str],
    *,
    data: Mapping[str, Any] | None = None,
    data_file: str | os.PathLike[str] | None = None,
    defaults: bool = False,
    template: str | None = None,
    git: bool = True,
    force: bool = False,
    trust: bool = False,
    quiet: bool = False,
) -> Path:
    """Render a new project into `dest` and return its path.

    Answers come from `data_file`, then `data` (which wins), then prompts, or the defaults
    with `defaults=True`. The project is rendered into a temporary folder beside `dest` and
    moved into place at the end, so a failure or Ctrl-C leaves nothing behind. Unless
    `git=False`, the project is a git repository with one commit.

    Raises PtscaffoldError (AnswersError, DestinationError) with a one-line message.
    """
    import copier

    dest = Path(os.path.abspath(Path(dest).expanduser()))
    _check_destination(dest, force)
    raw: dict[str, Any] = {}
    if data_file is not None:
        raw.update(_answers.load_data_file(data_file))
    raw.update(data or {})

    src, bundled = _source(template)
    if bundled:
        config: dict[str, Any] | None = _template.load_config()
        version = _template.template_version(config)
    else:
        config = _local_config(src)
    answers = _prepare_answers(config, raw, defaults, dest.name)
    user_defaults = _folder_defaults(config, dest.name)

    if bundled:
        with translate_errors("(bundled)"):
            repo = _cache.ensure_repo()
        redirect: contextlib.AbstractContextManager[Any] = _cache.redirected(repo)
        vcs_ref: str | None = f"v{version}"
    else:
        redirect, vcs_ref = contextlib.nullcontext(), None

    outer_repo = _enclosing_git_repo(dest)
    created = dest.parent
    while not created.parent.exists():
        created = created.parent
    created = created if not created.exists() else None  # first folder we create, if any
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".ptscaffold", dir=dest.parent))
    try:
        rendered = staging / dest.name
        with translate_errors(src if not bundled else "(bundled)"), redirect:
            worker = copier.run_copy(
                src,
                rendered,
                data=answers,
                defaults=defaults,
                user_defaults=user_defaults,
                vcs_ref=vcs_ref,
                unsafe=bundled or trust,
                quiet=True,
            )
        final_answers = dict(worker.answers.combined)
        _refuse_hidden_answers(worker, answers, final_answers, config)
        into_existing = dest.exists() and any(dest.iterdir())
        if not into_existing:
            if git:
                _run_hook(rendered)
            os.replace(rendered, dest)
        else:
            kept = _merge_into(rendered, dest)
            if kept:
                names = ", ".join(str(p) for p in kept[:5]) + (" ..." if len(kept) > 5 else "")
                note = f"note: kept {len(kept)} existing file(s) instead of the template's: {names}"
                _say(quiet, note, err=True)
            if git and (dest / ".git").exists():
                _say(quiet, f"note: {dest} is already a git repository; nothing was committed",
                     err=True)  # fmt: skip
            elif git:
                _run_hook(dest)
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    if outer_repo is not None:
        own = "; the project has its own repository" if (dest / ".git").exists() else ""
        _say(quiet, f"note: {dest} is inside the git repository {outer_repo}{own}", err=True)
    envops = dict(worker.template.envops) if hasattr(worker.template, "envops") else {}
    message = render_message(worker.template.message_after_copy, final_answers, str(dest), envops)
    _say(quiet, message.rstrip() + "\n" if message else FALLBACK_NEXT_STEPS.format(dest=dest))
    return dest


def _refuse_hidden_answers(
    worker: Any, given: Mapping[str, Any], final: Mapping[str, Any], config: Any
) -> None:
    """Copier renders an answer to a question whose `when` is false; refuse it instead."""
    hidden = set(getattr(worker.answers, "hidden", ()))
    for key in given:
        if key in hidden:
            reason = None
            if config is not None:
                question = _template.questions(config).get(key)
                if question is not None:
                    env = _answers._jinja_env(config.get("_envops") or {})
                    reason = _answers.when_refusal(key, question, final, env)
            raise AnswersError(reason or f"{key} does not apply with the other answers given")
