"""Context managers around the loops, so that they never flip global state by hand."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Evaluate without gradients, then restore whichever mode the model was in."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)


@contextlib.contextmanager
def maybe_profile(enabled: bool, out_dir: Path) -> Iterator[Callable[[], None]]:
    """Yield what the loop calls after every step: it traces steps 3-5 (after start-up and warm-up)
    into `out_dir` as a Chrome trace, for https://ui.perfetto.dev or `tensorboard --logdir`."""
    if not enabled:
        yield lambda: None
        return
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])]
    with profile(
        activities=activities,
        schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=tensorboard_trace_handler(str(out_dir)),
        record_shapes=True,
        profile_memory=True,
    ) as prof:
        yield prof.step
