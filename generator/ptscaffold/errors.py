"""Errors raised by the ptscaffold API, and the exit codes the CLI maps them to."""

from __future__ import annotations

# Exit codes of the `ptscaffold` command (also listed in `ptscaffold --help`).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CONFLICTS = 3
EXIT_OUTDATED = 4  # `check`: a newer template version is available
EXIT_TESTS_FAILED = 5  # `update` done, but the project's own tests fail after it
# Stopped by a signal: 128 + its number, as a shell reports a process the signal ended
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (`timeout`, a CI cancel)
EXIT_HANGUP = 129  # SIGHUP (the terminal closed)

EXIT_CODES_HELP = (
    f"Exit codes: {EXIT_OK} ok, {EXIT_ERROR} error, {EXIT_USAGE} usage or invalid answers, "
    f"{EXIT_CONFLICTS} update finished (or, with --dry-run, would finish) with conflicts, "
    f"{EXIT_OUTDATED} check: a newer template version is available, "
    f"{EXIT_TESTS_FAILED} update done but the project's tests fail, "
    f"{EXIT_INTERRUPTED} interrupted (Ctrl-C), "
    f"{EXIT_TERMINATED} stopped by SIGTERM, {EXIT_HANGUP} by SIGHUP."
)


class PtscaffoldError(Exception):
    """A failure explained in one line; the CLI prints it as `error: <message>`."""

    exit_code = EXIT_ERROR


class AnswersError(PtscaffoldError):
    """An answer (from --data, --data-file or a prompt) that the template cannot accept."""

    exit_code = EXIT_USAGE


class DestinationError(PtscaffoldError):
    """The destination of `new` cannot take a project."""


class UpdateRefused(PtscaffoldError):
    """`update` refused before touching the project."""


class UsageError(PtscaffoldError):
    """An argument that cannot work whatever the files say (a name too long, not a template)."""

    exit_code = EXIT_USAGE


class CopierIncompatible(PtscaffoldError):
    """The installed copier lacks a part of its private API that ptscaffold relies on."""


class Interrupted(PtscaffoldError):
    """Ctrl-C, SIGTERM or SIGHUP; the message says what state the files were left in, and the
    exit code which signal it was."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str, *, exit_code: int = EXIT_INTERRUPTED) -> None:
        super().__init__(message)
        self.exit_code = exit_code
