"""A signal that comes while ptscaffold makes a file or folder for itself stops the command
only once its name is known, so that the clean-up removes it."""

from __future__ import annotations

import signal
import sys
import tempfile
import types

import pytest
from ptscaffold import _files, _interrupts

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_a_held_signal_stops_the_command_after_the_block_as_it_would_have():
    before, done = signal.getsignal(signal.SIGTERM), []
    with pytest.raises(_interrupts.Terminated), _interrupts.interruptible():
        with _interrupts.held():
            signal.raise_signal(signal.SIGTERM)
            done.append("the rest of the block")
        done.append("after the block")
    assert done == ["the rest of the block"]
    assert signal.getsignal(signal.SIGTERM) == before  # put back


def test_a_signal_inside_a_deferred_undo_stays_dropped():
    done = []
    with _interrupts.deferred():
        with _interrupts.held():
            signal.raise_signal(signal.SIGINT)
        done.append("the rest of the undo")
    assert done == ["the rest of the undo"]


def test_a_file_written_whole_leaves_nothing_when_a_signal_comes_as_it_is_made(
    tmp_path, monkeypatch
):
    def signalled_as_it_returns(*args, **kwargs):
        made = tempfile.mkstemp(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)
        return made

    monkeypatch.setattr(_files, "tempfile", types.SimpleNamespace(mkstemp=signalled_as_it_returns))
    (tmp_path / "config").write_bytes(b"old")
    with pytest.raises(_interrupts.Terminated), _interrupts.interruptible():
        _files.write_whole(tmp_path / "config", b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["config"]
    assert (tmp_path / "config").read_bytes() == b"new"  # finished, then stopped
