"""7. What EMA weights cost per step: the generated loop with `ema_decay=0` vs `ema_decay=0.999`.

Both contenders run the generated `train` end to end on the default classification model (the
small CNN) and on the near-zero `Flatten + Linear` model of benchmark 1, in one thread, with the
same data; they differ in `ema_decay` only. The averaging is one fused lerp over the weights
after each optimizer step, so its cost grows with the parameter count, not the batch: the
near-zero model shows it as milliseconds, the CNN as a share of a real step.
"""

from __future__ import annotations

import math
import operator
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.overhead import tiny_model, write_images

BATCH = 16
CONTENDERS = ["cnn-off", "cnn-ema", "linear-off", "linear-ema"]


def run(work: Path, quick: bool) -> common.Section:
    project, package = common.render(work, "classification")
    warmup, window, repeats = (3, 20, 1) if quick else (20, 300, 5)
    steps = common.StepClock(warmup, window).steps_needed
    images = work / f"images-{steps}.npz"
    write_images(images, n=math.ceil(steps * BATCH / 0.9) + BATCH)
    spec = dict(work=str(work), project=str(project), package=package, images=str(images))
    spec |= dict(warmup=warmup, window=window)
    results = common.compare("ema", spec, CONTENDERS, repeats)
    rows, figures = [], {}
    for model in ("cnn", "linear"):
        off, on = f"{model}-off", f"{model}-ema"
        # CPU time of the training thread: less moved by a busy neighbour than wall time
        ratio = common.paired(results, "cpu_ms_per_step", on, off, operator.truediv)
        added = common.paired(results, "cpu_ms_per_step", on, off, operator.sub)
        update_ms = common.median(results[on], "update_ms")
        step_ms = common.median(results[off], "cpu_ms_per_step")
        params = results[on][0]["parameters"]
        rows.append([
            model, f"{params:,}", common.fmt(step_ms, 3),
            common.fmt(common.median(results[on], "cpu_ms_per_step"), 3),
            f"{statistics.median(added):+.3f}", common.fmt(statistics.median(ratio), 3),
            common.middle_half(ratio), common.fmt(update_ms, 4),
            common.fmt((step_ms + update_ms) / step_ms, 4),
        ])  # fmt: skip
        figures[f"{model}_ratio"] = statistics.median(ratio)
        figures[f"{model}_added_ms"] = statistics.median(added)
        figures[f"{model}_update_ms"] = update_ms
    return common.Section(
        title="7. EMA weights per step",
        target="report the per-step cost of `ema_decay` as a ratio",
        columns=["Model", "parameters", "off CPU ms/step", "EMA CPU ms/step", "added", "ratio",
                 "ratio, middle half", "update alone, ms", "ratio from update alone"],
        rows=rows,
        figures=figures,
        notes=[
            f"{window} steps timed per run after {warmup} warm-up steps, batch {BATCH}, one torch "
            f"thread, {repeats} interleaved run(s) per contender; ratio = EMA / off of the same "
            "round, median over rounds, of the training thread's CPU time. Validation (which "
            "EMA doubles) falls outside the window.",
            "Update alone: the median of 200 timed `Ema.update()` calls on the same model after "
            "the run, and (off step + update) / off step: the cost with the run-to-run noise of "
            "two whole runs taken out.",
            common.load_note(results),
        ],
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    project = common.import_project(spec)
    clock = common.StepClock(spec["warmup"], spec["window"])
    model, ema = spec["contender"].split("-")
    args = [
        *common.timed_run_args(spec, clock, BATCH),
        f"ema_decay={0.999 if ema == 'ema' else 0.0}",
    ]
    built = {}
    real_build_model = project.loop.build_model

    def build_model(cfg: Any, info: Any) -> Any:
        built["model"] = tiny_model() if model == "linear" else real_build_model(cfg, info)
        return built["model"]

    project.loop.build_model = build_model
    common.run_generated(project, args, clock)
    return {
        "ms_per_step": clock.seconds_per_step() * 1e3,
        "cpu_ms_per_step": clock.cpu_seconds_per_step() * 1e3,
        "update_ms": time_update(project, built["model"]) if ema == "ema" else 0.0,
        "parameters": sum(p.numel() for p in built["model"].parameters()),
    }


def time_update(project: Any, model: Any, calls: int = 200) -> float:
    """Median ms of one `Ema.update()` over `model`'s weights."""
    import importlib

    import torch

    ema_module = importlib.import_module(f"{project.loop.__package__}.ema")
    ema = ema_module.Ema(model, torch.optim.SGD(model.parameters(), lr=0.0), 0.999)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        ema.update()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


if __name__ == "__main__":
    common.worker_main(measure)
