"""`new`: render the template into a fresh project, atomically."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import _answers, _cache, _template
from ._copier import NO_TTY, render_message, translate_errors
from ._questions import Questionnaire
from .errors import AnswersError, DestinationError, PtscaffoldError, UsageError

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


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path):
        path = path.parent
    return path


def _check_name(dest: Path) -> None:
    """Refuse a folder name the file system cannot hold, before anything is written."""
    existing = _nearest_existing(dest.parent)
    try:
        limit = os.pathconf(existing, "PC_NAME_MAX") if existing.is_dir() else 255
    except (OSError, ValueError, AttributeError):
        limit = 255
    for part in dest.relative_to(existing).parts:
        if len(os.fsencode(part)) > limit:
            raise UsageError(
                f"the folder name {part[:40]}... is {len(os.fsencode(part))} bytes long; "
                f"this file system allows at most {limit}"
            )


def _check_destination(dest: Path, force: bool) -> None:
    """Refuse a destination that cannot take a project, before anything is written."""
    if dest.is_symlink():
        target = os.readlink(dest)
        raise DestinationError(
            f"{dest} is a symbolic link (to {target}); give the folder itself as DEST"
        )
    if dest.exists():
        if not dest.is_dir():
            raise DestinationError(f"{dest} exists and is not a directory")
        if any(dest.iterdir()) and not force:
            raise DestinationError(
                f"{dest} exists and is not empty; choose another destination, or pass --force "
                "to add the project's files beside yours (none of yours is overwritten or deleted)"
            )
    existing = _nearest_existing(dest.parent)
    if not existing.is_dir():
        raise DestinationError(f"cannot create {dest}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DestinationError(f"cannot create {dest}: {existing} is not writable")


def _source(template: str | None) -> tuple[str, Path | None, bool]:
    """(copier source, local folder to read the questions from, is_bundled).

    Local paths become absolute: copier records them as given.
    """
    if template is None:
        return _template.CANONICAL_URL, _template.template_root(), True
    path = Path(template).expanduser()
    if path.is_dir():
        if not any((path / name).is_file() for name in ("copier.yml", "copier.yaml")):
            raise UsageError(
                f"template {template} has no copier.yml: it is not a Copier template "
                "(give the folder that holds copier.yml, a git bundle or a git URL)"
            )
        return str(path.resolve()), path.resolve(), False
    if path.exists():  # a git bundle file: copier reads it
        return str(path.resolve()), None, False
    if "://" in template or template.startswith(("git@", "gh:", "gl:")):
        return template, None, False
    raise UsageError(f"template {template} does not exist (give a folder, bundle or git URL)")


def _prepare_answers(
    quest: Questionnaire | None, raw: Mapping[str, Any], defaults: bool, folder: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(answers to pass, user defaults): checked against the template's questions.

    Refuses a question that would need a prompt when there is no terminal.
    """
    if quest is None:
        return dict(raw), {}
    # A project_name without a default in copier.yml defaults to the destination's name.
    project_name = quest.asked.get("project_name")
    user_defaults = (
        {"project_name": folder} if project_name is not None and project_name.default is None
        else {}
    )  # fmt: skip
    terminal = _stdin_is_tty()
    walk = quest.walk(
        raw, user_defaults=user_defaults, defaults=defaults, interactive=not defaults and terminal
    )
    if not defaults and not terminal and walk.prompted:
        raise AnswersError(f"{NO_TTY} (unanswered: {', '.join(walk.prompted)})")
    return {k: walk.answers[k] for k in raw}, user_defaults


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


def _refuse_planted_git(rendered: Path, src: str) -> None:
    """An untrusted template must not leave a git repository (or a `.git` file pointing to
    one): its config, hooks and filters would run on the user's next git command."""
    for dirpath, dirnames, filenames in os.walk(rendered):
        for name in (*dirnames, *filenames):
            if name.lower() == ".git":
                where = Path(dirpath, name).relative_to(rendered)
                raise PtscaffoldError(
                    f"template {src} renders {where}: a git repository from a template can "
                    "run its commands (hooks, fsmonitor, filters) on the next git command, so "
                    "an untrusted template may not plant one; nothing was written (pass "
                    "--trust if you trust the template)"
                )


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


def _kept_note(kept: list[Path]) -> str:
    names = ", ".join(str(p) for p in kept[:5]) + (" ..." if len(kept) > 5 else "")
    return f"note: kept {len(kept)} existing file(s) instead of the template's: {names}"


@contextlib.contextmanager
def _claimed(dest: Path) -> Iterator[bool]:
    """Hold `dest` (created empty here if missing) for this process alone; yields whether
    this process created it.

    A second `new` into the same folder at the same time fails at once instead of mixing
    its files into the first one's. The lock is on the folder itself: nothing is left behind.
    """
    made = False
    with contextlib.suppress(FileExistsError):
        dest.mkdir()
        made = True
    try:
        import fcntl
    except ImportError:  # Windows: the final rename still refuses a folder filled meanwhile
        yield made
        return
    fd = os.open(dest, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DestinationError(
                f"another ptscaffold is creating a project in {dest} right now; "
                "wait for it to finish, or choose another destination"
            ) from None
        yield made
    finally:
        os.close(fd)


def _move_into_place(rendered: Path, dest: Path) -> None:
    """Replace the empty `dest` by the rendered project in one rename."""
    try:
        os.replace(rendered, dest)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise DestinationError(
                f"{dest} was filled by another program while the project was rendered; "
                "nothing of the project was written into it"
            ) from exc
        raise PtscaffoldError(f"cannot move the project into {dest}: {exc.strerror}") from exc


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

    Raises PtscaffoldError (AnswersError, DestinationError, UsageError) with a one-line message.
    """
    from . import _copier

    dest = Path(os.path.abspath(Path(dest).expanduser()))
    _check_name(dest)
    _check_destination(dest, force)
    raw: dict[str, Any] = {}
    if data_file is not None:
        raw.update(_answers.load_data_file(data_file))
    raw.update(data or {})

    src, root, bundled = _source(template)
    label = "(bundled)" if bundled else src
    with translate_errors(label):
        quest = Questionnaire(root, dest) if root is not None else None
        answers, user_defaults = _prepare_answers(quest, raw, defaults, dest.name)

    if bundled:
        with translate_errors(label):
            repo = _cache.ensure_repo()
        redirect: contextlib.AbstractContextManager[Any] = _cache.redirected(repo)
        vcs_ref: str | None = f"v{_template.template_version()}"
    else:
        redirect, vcs_ref = contextlib.nullcontext(), None

    outer_repo = _enclosing_git_repo(dest)
    into_existing = dest.is_dir() and any(dest.iterdir())
    # The first missing folder above `dest`, removed again if anything fails.
    created = dest.parent
    while not os.path.lexists(created.parent):
        created = created.parent
    created_parent = created if not os.path.lexists(created) else None
    staging: Path | None = None
    made_dest = False
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with _claimed(dest) as made_dest:
            # A short fixed name: the staging folder must fit wherever `dest` fits.
            staging = Path(tempfile.mkdtemp(prefix=".ptscaffold-", dir=dest.parent))
            rendered = staging / dest.name
            with translate_errors(label), redirect:
                worker = _copier.run(
                    operation="copy",
                    src_path=src,
                    dst_path=rendered,
                    data=answers,
                    defaults=defaults,
                    user_defaults=user_defaults,
                    vcs_ref=vcs_ref,
                    unsafe=bundled or trust,
                    quiet=True,
                )
            if not (bundled or trust):
                _refuse_planted_git(rendered, src)
            if not into_existing:
                if git:
                    _run_hook(rendered)
                _move_into_place(rendered, dest)
            else:
                kept = _merge_into(rendered, dest)
                if kept:
                    _say(quiet, _kept_note(kept), err=True)
                if git and (dest / ".git").exists():
                    _say(quiet, f"note: {dest} is already a git repository; nothing was committed",
                         err=True)  # fmt: skip
                elif git:
                    _run_hook(dest)
    except BaseException:
        if made_dest:  # the empty folder made for this project (never a user's folder)
            with contextlib.suppress(OSError):
                os.rmdir(dest)
        if created_parent is not None:
            shutil.rmtree(created_parent, ignore_errors=True)
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)

    if outer_repo is not None:
        own = "; the project has its own repository" if (dest / ".git").exists() else ""
        _say(quiet, f"note: {dest} is inside the git repository {outer_repo}{own}", err=True)
    message = render_message(worker, worker.template.message_after_copy, dest)
    _say(quiet, message.rstrip() + "\n" if message else FALLBACK_NEXT_STEPS.format(dest=dest))
    return dest
