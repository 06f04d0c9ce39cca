"""The pieces of one-line error messages, shared by every module that words an error for the user.

Imports nothing of the project and nothing heavy: the sweep's commands and the config use it
without importing torch.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def first_line(err: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def did_you_mean(word: str, known: Iterable[str], otherwise: str) -> str:
    """The hint that ends an "unknown ..." message: the known word closest to `word`, else
    `otherwise`."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else otherwise
