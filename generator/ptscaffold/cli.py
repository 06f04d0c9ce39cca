"""The `ptscaffold` command: parse options, call one API function, map errors to exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from ._interrupts import exit_code
from .errors import (
    EXIT_CODES_HELP,
    EXIT_CONFLICTS,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTDATED,
    EXIT_TESTS_FAILED,
    Interrupted,
    PtscaffoldError,
)

try:
    # The one slow import before `_run` can catch a Ctrl-C: copier and everything that uses
    # it are imported inside `_run`.
    import typer
except KeyboardInterrupt:
    sys.stderr.write("\ninterrupted\n")
    raise SystemExit(EXIT_INTERRUPTED) from None

T = TypeVar("T")

MAIN_EPILOG = f"""\b
Examples:
  ptscaffold new my-project                      # answer the questions interactively
  ptscaffold new my-project --defaults --data amp=bf16 --data distributed=ddp
  ptscaffold features                            # every question, its choices and default
  cd my-project && ptscaffold check              # exit 4 when a newer template exists
  cd my-project && ptscaffold update --dry-run   # what an update would change
  cd my-project && ptscaffold update             # newer template, keeping your edits

\b
{EXIT_CODES_HELP}"""

NEW_EPILOG = """\b
Examples:
  ptscaffold new my-project
  ptscaffold new my-project --defaults --data project_name="My Project" --data compile=true
  ptscaffold new my-project --data-file answers.yml --no-git"""

UPDATE_EPILOG = f"""\b
Examples:
  ptscaffold update                      # the project in the current directory
  ptscaffold update my-project --data amp=bf16
  ptscaffold update my-project --conflict rej --to 0.2.0
  ptscaffold update --dry-run            # what it would change; the project is not written

Exit code {EXIT_CONFLICTS}: the update finished but left conflicts; resolve the listed files, then
commit. Without conflicts, the project's own tests run afterwards (--no-test skips them); exit
code {EXIT_TESTS_FAILED}: the update is in place but tests fail (the way back is printed).

A file of yours that git ignores where the template now has one is kept: the template's
version is written beside it (NAME.ptscaffold-new) and listed with the conflicts.

Interrupted (Ctrl-C, SIGTERM, SIGHUP) or failed, an update puts the project back as it was; one
killed outright (SIGKILL) is put back by the next `ptscaffold update` before it starts."""

CHECK_EPILOG = f"""\b
Examples:
  ptscaffold check                       # the project in the current directory
  ptscaffold check my-project --json
  ptscaffold check --changelog           # what the newer template changes (Markdown)

Exit code {EXIT_OK}: on the newest version; {EXIT_OUTDATED}: a newer one is available
(`ptscaffold update --dry-run` shows what it changes)."""

FEATURES_EPILOG = """\b
Example:
  ptscaffold features"""

app = typer.Typer(
    name="ptscaffold",
    help="Generate a PyTorch training project from a Copier template, and keep it up to date.",
    epilog=MAIN_EPILOG,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# Typer turns a Ctrl-C outside `_run` (while it parses the options) into a silent exit 130.
_SAID_INTERRUPTED: list[bool] = []


def _run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call the API; the single place where exceptions become messages and exit codes."""
    try:
        return fn(*args, **kwargs)
    except Interrupted as exc:
        _SAID_INTERRUPTED.append(True)
        typer.echo(f"\n{exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except PtscaffoldError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt as exc:  # SIGTERM and SIGHUP too, in `new` and `update`
        _SAID_INTERRUPTED.append(True)
        typer.echo("\ninterrupted", err=True)
        raise typer.Exit(exit_code(exc)) from None
    except Exception as exc:
        if os.environ.get("PTSCAFFOLD_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        typer.echo(
            f"error: unexpected {type(exc).__name__}: {first} (set PTSCAFFOLD_DEBUG=1 for a "
            "traceback)",
            err=True,
        )
        raise typer.Exit(EXIT_ERROR) from None


def _data(items: list[str] | None) -> dict[str, str]:
    def parse() -> dict[str, str]:
        from ._answers import parse_data_items

        return parse_data_items(items or [])

    return _run(parse)


def _version_callback(value: bool) -> None:
    if value:

        def installed() -> str:
            from . import __version__

            return str(__version__)

        typer.echo(f"ptscaffold {_run(installed)}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    """Generate a PyTorch training project from a Copier template, and keep it up to date."""


DataOption = Annotated[
    list[str] | None,
    typer.Option(
        "--data",
        "-d",
        metavar="KEY=VALUE",
        help="Answer a question (repeatable); see `ptscaffold features`.",
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust", help="Let a template other than the bundled one run its tasks and migrations."
    ),
]


@app.command(epilog=NEW_EPILOG)
def new(
    dest: Annotated[Path, typer.Argument(metavar="DEST", help="Folder to create the project in.")],
    data: DataOption = None,
    data_file: Annotated[
        Path | None,
        typer.Option(
            "--data-file", metavar="FILE", help="YAML file of answers (question: answer)."
        ),
    ] = None,
    defaults: Annotated[
        bool, typer.Option("--defaults", help="Use the default for every question not answered.")
    ] = False,
    template: Annotated[
        str | None,
        typer.Option(
            "--template", metavar="SRC", help="Another copy of the template: path or git URL."
        ),
    ] = None,
    no_git: Annotated[
        bool, typer.Option("--no-git", help="Do not make a git repository and initial commit.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Render into a non-empty folder; files already there are kept as they are.",
        ),
    ] = False,
    trust: TrustOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only errors.")] = False,
) -> None:
    """Create a new project in DEST (questions are asked unless answered or --defaults)."""

    def api_new(*args: Any, **kwargs: Any) -> Path:
        from ._new import new

        return new(*args, **kwargs)

    _run(
        api_new,
        dest,
        data=_data(data),
        data_file=data_file,
        defaults=defaults,
        template=template,
        git=not no_git,
        force=force,
        trust=trust,
        quiet=quiet,
    )


# The options of `update`
AskOption = Annotated[
    bool, typer.Option("--ask", help="Ask every question again (recorded answers as defaults).")
]
ConflictOption = Annotated[
    str,
    typer.Option(
        "--conflict",
        metavar="inline|rej",
        help="Overlapping edits: inline conflict markers, or .rej files.",
    ),
]
ToOption = Annotated[
    str | None,
    typer.Option("--to", metavar="REF", help="Template version or git ref to update to."),
]
TestOption = Annotated[
    bool,
    typer.Option(
        "--test/--no-test",
        help="After an update without conflicts, run the project's own tests (default).",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run", help="Show what the update would change, file by file; write nothing."
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print only errors.")]


@app.command(epilog=UPDATE_EPILOG)
def update(
    project: Annotated[
        Path, typer.Argument(metavar="[PROJECT]", help="The project to update (default: here).")
    ] = Path("."),
    data: DataOption = None,
    ask: AskOption = False,
    conflict: ConflictOption = "inline",
    to: ToOption = None,
    trust: TrustOption = False,
    test: TestOption = True,
    dry_run: DryRunOption = False,
    quiet: QuietOption = False,
) -> None:
    """Apply template changes (and changed answers) to PROJECT, keeping your edits."""

    def api_update(*args: Any, **kwargs: Any) -> Any:
        from ._update import update

        return update(*args, **kwargs)

    def api_preview(*args: Any, **kwargs: Any) -> Any:
        from ._preview import preview

        return preview(*args, **kwargs)

    if conflict not in ("inline", "rej"):
        raise typer.BadParameter("must be inline or rej", param_hint="--conflict")
    if dry_run:
        if ask:
            raise typer.BadParameter("cannot ask questions in a dry run", param_hint="--ask")
        _show_preview(
            _run(
                api_preview,
                project,
                data=_data(data),
                conflict=conflict,  # type: ignore[arg-type]
                to=to,
                trust=trust,
            )
        )
        return
    result = _run(
        api_update,
        project,
        data=_data(data),
        ask=ask,
        conflict=conflict,  # type: ignore[arg-type]
        to=to,
        trust=trust,
        quiet=quiet,
    )
    _report_update(result, test=test, quiet=quiet)


def _report_update(result: Any, *, test: bool, quiet: bool) -> None:
    """What the update did; its conflicts (exit 3), or the project's tests run after it."""
    if result.conflicts:
        typer.echo(f"Updated {result.project} to {result.new_version} with conflicts in:", err=True)
        for name in result.conflicts:
            typer.echo(f"  {name}", err=True)
        typer.echo(
            "Resolve them (look for <<<<<<< markers, the .rej files, and in each "
            ".ptscaffold-new file the template's version of a file of yours that git ignores), "
            "then commit.",
            err=True,
        )
        raise typer.Exit(EXIT_CONFLICTS)
    if not quiet:
        typer.echo(f"Updated {result.project} from {result.old_version} to {result.new_version}.")
    if test and not result.trusted:
        typer.echo(
            "Tests not run: they hold code from a template nobody trusted (pass --trust to "
            "run them after the update).",
            err=True,
        )
    elif test:
        _test_after_update(result.project, quiet)
    if not quiet:
        typer.echo("Review with `git diff`, then commit.")


def _test_after_update(project: Path, quiet: bool) -> None:
    """The project's own tests; failing, the update stays and the way back is named (exit 5)."""
    from ._aftercheck import head_commit, run_project_tests
    from ._update import read_answers

    package = str(read_answers(project).get("package_name", ""))
    if not quiet:
        typer.echo("Running the project's tests...")
    report = _run(run_project_tests, project, package)
    if not report.ran:
        typer.echo(f"Tests not run: {report.summary}; run `python -m pytest` in it.", err=True)
        return
    if report.passed:
        if not quiet:
            typer.echo(f"The project's tests pass: {report.summary}.")
        return
    typer.echo(f"The project's tests fail after the update: {report.summary}", err=True)
    for name in report.failed:
        typer.echo(f"  {name}", err=True)
    before = head_commit(project)
    typer.echo(
        "The update is in place. To go back to the commit before it: "
        f"git reset --hard {before} && git clean -fd",
        err=True,
    )
    raise typer.Exit(EXIT_TESTS_FAILED)


def _show_preview(preview: Any) -> None:
    """The changes an update would make, one line a file; exit 3 when it would leave conflicts."""
    if preview.uncommitted:
        typer.echo(
            f"From the working tree as it is: its {len(preview.uncommitted)} uncommitted or "
            "untracked files count as committed (the update itself needs them committed or "
            "stashed)."
        )
    if not preview.changes:
        typer.echo(f"{preview.project} is on {preview.new_version}: an update changes nothing.")
        return
    typer.echo(
        f"Updating {preview.project} from {preview.old_version} to {preview.new_version} "
        f"would change {len(preview.changes)} files:"
    )
    for change in preview.changes:
        lines = "" if change.added is None else f"  (+{change.added} -{change.deleted})"
        moved = f"{change.old_path} -> " if change.old_path else ""
        typer.echo(f"  {change.kind:<9} {moved}{change.path}{lines}")
    if preview.conflicts:
        typer.echo(f"It would leave conflicts in {len(preview.conflicts)}:", err=True)
        for name in preview.conflicts:
            typer.echo(f"  {name}", err=True)
    typer.echo("Nothing was written. Run it without --dry-run to update.")
    if preview.conflicts:
        raise typer.Exit(EXIT_CONFLICTS)


@app.command(epilog=CHECK_EPILOG)
def check(
    project: Annotated[
        Path, typer.Argument(metavar="[PROJECT]", help="The project to check (default: here).")
    ] = Path("."),
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the result as one JSON object.")
    ] = False,
    changelog: Annotated[
        bool,
        typer.Option(
            "--changelog",
            help="Print instead the template's CHANGELOG sections that the update brings "
            "(Markdown; nothing when up to date). With --json: its `changelog` entry.",
        ),
    ] = False,
) -> None:
    """Tell whether a newer template version is available for PROJECT (exit 4 when it is)."""

    def api_check(*args: Any) -> Any:
        from ._check import check

        return check(*args)

    def api_changelog(*args: Any) -> str:
        from ._check import changelog

        return changelog(*args)

    status = _run(api_check, project)
    notes = _run(api_changelog, status) if changelog else None
    if json_output:
        import json

        found = status.as_dict()
        if notes is not None:
            found["changelog"] = notes
        typer.echo(json.dumps(found))
    elif notes is not None:
        if notes:
            typer.echo(notes, nl=False)
    elif status.update_available:
        typer.echo(
            f"{status.project} is on template {status.version}; {status.latest} is available: "
            "`ptscaffold update --dry-run` shows what it changes."
        )
    else:
        typer.echo(f"{status.project} is on the newest template, {status.version}.")
    if status.update_available:
        raise typer.Exit(EXIT_OUTDATED)


@app.command(epilog=FEATURES_EPILOG)
def features() -> None:
    """List every question of the template: choices, default and what it renders."""

    def table() -> str:
        from . import _features

        return _features.table(_features.features())

    typer.echo(_run(table))


def main() -> None:
    try:
        app(prog_name="ptscaffold")
    except KeyboardInterrupt as exc:  # outside `_run`: still no traceback
        sys.stderr.write("\ninterrupted\n")
        raise SystemExit(exit_code(exc)) from None
    except SystemExit as exc:
        if exc.code == EXIT_INTERRUPTED and not _SAID_INTERRUPTED:
            sys.stderr.write("\ninterrupted\n")
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
