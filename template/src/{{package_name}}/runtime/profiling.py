"""`profile=true`: trace a short window of steps with torch.profiler.

The trace lands in `<run_dir>/profile/` as a Chrome trace (`*.pt.trace.json`): open it at
https://ui.perfetto.dev or chrome://tracing, or with `tensorboard --logdir <run_dir>/profile`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

# Skip a step (start-up noise), warm up on one, then record three
WAIT, WARMUP, ACTIVE = 1, 1, 3


@contextlib.contextmanager
def maybe_profile(enabled: bool, out_dir: Path) -> Iterator[Callable[[], None]]:
    """Yield the function the loop calls after every step (a no-op when profiling is off)."""
    if not enabled:
        yield lambda: None
        return
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=tensorboard_trace_handler(str(out_dir)),
        record_shapes=True,
        profile_memory=True,
    ) as prof:
        yield prof.step
