"""One-line errors and the pieces of their messages, and `Must`, a config rule that says what a
value must be. Free of torch: the config and the sweep use them."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ConfigDict
from pydantic_core import core_schema


class ConfigError(ValueError):
    """A configuration problem, worded as one line for the user."""


class DataError(ValueError):
    """A data source that cannot be used, worded as one line naming the file. Here, free of torch,
    so that preparing a corpus (the language model's prepare) needs numpy alone."""


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


# Every config section's pydantic settings: a NaN or an infinity is a bad value, never a setting
SECTION = ConfigDict(allow_inf_nan=False)


@dataclasses.dataclass(frozen=True)
class Must:
    """A rule of one config key that no bound (`ge`, `lt`...) can say, in its declaration:
    `Annotated[int, Must(lambda v: v == 0 or v >= 2, "0 or an int >= 2")]`. `what` completes
    "must be" in the key's one-line error and in --help."""

    ok: Callable[[Any], bool]
    what: str

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def _check(self, value: Any) -> Any:
        if not self.ok(value):
            raise ValueError(self.what)
        return value
