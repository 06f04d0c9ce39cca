"""One-line errors and the pieces of their messages. Free of torch: the config and the sweep use
them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(ValueError):
    """A configuration problem, worded as one line for the user."""


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used, worded as one line naming the file. Here, below every
    module that reads or writes checkpoints, so that each raises the same one."""


# How a device setting must be spelled, for the config's check and the device's own
DEVICE_EXPECTED = "'auto' or a torch device (cpu, cuda, cuda:1, mps)"


def first_line(err: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def did_you_mean(word: str, known: Iterable[str], otherwise: str) -> str:
    """The end of an "unknown ..." message: the known word closest to `word`, else `otherwise`."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else otherwise
