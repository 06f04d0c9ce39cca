"""`new`: render the template into a fresh project, atomically."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import _answers, _cache, _interrupts, _locks, _planted, _template
from ._copier import NO_TTY, render_message, translate_errors
from ._questions import Questionnaire, template_version
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


def _made(dest: Path) -> bool:
    """Create `dest` if it is missing; whether this process created it."""
    try:
        dest.mkdir()
    except FileExistsError:
        return False
    return True


@contextlib.contextmanager
def _claimed(dest: Path, force: bool) -> Iterator[bool]:
    """Hold the existing `dest` for this process alone; yields whether it holds files (which
    stay: `force`).

    Of two `new` into the same folder at the same time, one holds it and the other fails at
    once, before writing anything. What the folder holds is read once it is held: the other
    one may have filled it (moved its project into place) since this one started.
    """
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(_locks.held(dest))
        except BlockingIOError:
            raise DestinationError(
                f"another ptscaffold is creating a project in {dest} right now; "
                "wait for it to finish, or choose another destination"
            ) from None
        except OSError as exc:  # removed meanwhile, by the `new` that had made it
            raise DestinationError(f"cannot create {dest}: {exc.strerror}") from exc
        _check_destination(dest, force)
        yield any(dest.iterdir())


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


# Staging folders: `.ptscaffold-<pid>-<random>` beside the destination, short so that they fit
# wherever the destination fits. The pid tells a folder whose process is gone.
STAGING_PREFIX = ".ptscaffold-"
_STAGING_NAME = re.compile(r"\.ptscaffold-(?P<pid>\d+)-[a-z0-9_]+")


def _make_staging(parent: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=parent))


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: is there such a process (sends nothing)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _remove_dead_stagings(parent: Path) -> None:
    """Remove the staging folders in `parent` of `new` runs that were killed (SIGKILL, a
    crash): only folders of that name (never a link), and only when their process is gone."""
    if os.name != "posix":  # elsewhere os.kill(pid, 0) would end the process
        return
    with os.scandir(parent) as entries:
        for entry in entries:
            found = _STAGING_NAME.fullmatch(entry.name)
            dead = found is not None and not _is_running(int(found["pid"]))
            if dead and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)


def _remove_made_folders(dest: Path, made_dest: bool, created_parent: Path | None) -> None:
    """Remove the folders this `new` made (`dest` if it did, and those above it up to
    `created_parent`) while they are empty, and `dest` only while no other `new` holds it (it
    may have lost the race for it to one that found it made)."""
    made = [dest] if made_dest else []
    if created_parent is not None:  # an ancestor of `dest`
        made += [dest.parent, *dest.parent.parents]
        made = made[: made.index(created_parent) + 1]
    for folder in made:
        try:
            with _locks.held(folder) if folder == dest else contextlib.nullcontext():
                folder.rmdir()
        except OSError:  # not empty, held (BlockingIOError), or gone
            return


def _served(bundled: bool, label: str) -> tuple[contextlib.AbstractContextManager[Any], str | None]:
    """(the context that serves the template to copier, the ref to render): the bundled
    template from the local cache at the installed version; another as copier reads it."""
    if not bundled:
        return contextlib.nullcontext(), None
    with translate_errors(label):
        repo = _cache.ensure_repo()
    return _cache.redirected(repo), f"v{template_version()}"


def _copy(
    into: Path,
    *,
    label: str,
    redirect: contextlib.AbstractContextManager[Any],
    trusted: bool,
    **kwargs: Any,
) -> Any:
    """Copier's copy of the template (`kwargs`: src_path, data, ...) into `into`; its worker.
    A template nobody trusted may not plant a git repository there."""
    from . import _copier

    with translate_errors(label), redirect:
        worker = _copier.run(operation="copy", dst_path=into, unsafe=trusted, quiet=True, **kwargs)
    if not trusted:
        _planted.refuse_planted(into, kwargs["src_path"])
    return worker


def _render_into_place(
    dest: Path, render: Callable[[Path], Any], *, force: bool, git: bool, quiet: bool
) -> Any:
    """`render(folder)` renders the project into a staging folder beside `dest` (returning
    copier's worker); the project is then moved into place, or merged into a `dest` that holds
    files (`force`), with a git repository unless not `git`. A failure or a signal removes
    everything this made."""
    # The first missing folder above `dest`, removed again if anything fails.
    created = dest.parent
    while not os.path.lexists(created.parent):
        created = created.parent
    created_parent = created if not os.path.lexists(created) else None
    staging: Path | None = None
    made_dest = done = False
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        # A signal between making a folder and keeping its name would leave it behind.
        with _interrupts.held():
            made_dest = _made(dest)
        with _claimed(dest, force) as into_existing:
            _remove_dead_stagings(dest.parent)
            with _interrupts.held():
                staging = _make_staging(dest.parent)
            rendered = staging / dest.name
            worker = render(rendered)
            if into_existing:
                _add_to_existing(rendered, dest, git=git, quiet=quiet)
            else:
                if git:
                    _run_hook(rendered)
                _move_into_place(rendered, dest)
        done = True
    finally:
        with _interrupts.deferred():  # a second Ctrl-C must not stop the clean-up half way
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            if not done:
                _remove_made_folders(dest, made_dest, created_parent)
    return worker


def _add_to_existing(rendered: Path, dest: Path, *, git: bool, quiet: bool) -> None:
    """`--force`: the rendered files that `dest` lacks go in; git only where `dest` has none."""
    kept = _merge_into(rendered, dest)
    if kept:
        _say(quiet, _kept_note(kept), err=True)
    if git and (dest / ".git").exists():
        _say(quiet, f"note: {dest} is already a git repository; nothing was committed", err=True)
    elif git:
        _run_hook(dest)


@_interrupts.interruptible()
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
    moved into place at the end, so a failure, Ctrl-C, SIGTERM or SIGHUP leaves nothing behind
    (the next `new` beside it removes what one killed outright left). Of two `new` into one
    folder at once, one fails at once. Unless `git=False`, the project is a git repository
    with one commit.

    Raises PtscaffoldError (AnswersError, DestinationError, UsageError) with a one-line message.
    """
    dest = Path(os.path.abspath(Path(dest).expanduser()))
    _check_name(dest)
    _check_destination(dest, force)
    from_file = _answers.load_data_file(data_file) if data_file is not None else {}
    raw: dict[str, Any] = {**from_file, **(data or {})}

    src, root, bundled = _source(template)
    label = "(bundled)" if bundled else src
    with translate_errors(label):
        # The trust decision comes first: reading the questions imports Jinja extensions.
        quest = Questionnaire(root, dest, trusted=bundled or trust) if root is not None else None
        answers, user_defaults = _prepare_answers(quest, raw, defaults, dest.name)
    redirect, vcs_ref = _served(bundled, label)

    render = functools.partial(
        _copy,
        label=label,
        redirect=redirect,
        trusted=bundled or trust,
        src_path=src,
        data=answers,
        defaults=defaults,
        user_defaults=user_defaults,
        vcs_ref=vcs_ref,
    )
    outer_repo = _enclosing_git_repo(dest)
    worker = _render_into_place(dest, render, force=force, git=git, quiet=quiet)
    if outer_repo is not None:
        own = "; the project has its own repository" if (dest / ".git").exists() else ""
        _say(quiet, f"note: {dest} is inside the git repository {outer_repo}{own}", err=True)
    message = render_message(worker, worker.template.message_after_copy, dest)
    _say(quiet, message.rstrip() + "\n" if message else FALLBACK_NEXT_STEPS.format(dest=dest))
    return dest
