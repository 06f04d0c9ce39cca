"""The command-line parser the commands share, so that every `--help` reads alike: the command
as it is run, what it does, each option with its default, and the exit codes."""

from __future__ import annotations

import argparse


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Each option's default after its help, unless there is none to show or the help words it
    itself; the description and epilog kept as written: the module's docstring, laid out by hand."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def command_parser(command: str, doc: str | None, epilog: str | None = None) -> argparse.ArgumentParser:
    """The parser of `python -m <package>.<command>`, described by `doc` (the module's docstring,
    where `<package>` stands for the package's name)."""
    package = (__package__ or "").rpartition(".")[0]
    return argparse.ArgumentParser(
        prog=f"python -m {package}.{command}",
        description=(doc or "").replace("<package>", package).strip(),
        epilog=epilog,
        formatter_class=_HelpFormatter,
    )
