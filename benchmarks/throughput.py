"""2. Throughput of the real generated models (the CNN and the LM at their defaults, on CPU).

The generated `train` with every default (built-in data with its augmentation, the DataLoader
workers and torch threads `cpu_budget` picks, progress, metrics, NaN guard) against the
hand-written loop over the same data, loader, threads, model, optimizer and schedule: the
ratio is what the generated loop costs (or saves) on a real model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import common

TARGET = 0.97
# (warm-up steps, timed steps): a few seconds of steps each, inside the first epoch of the
# built-in data (64 and 53 steps of 64 samples)
WINDOWS = {"classification": (5, 45), "language_model": (3, 20)}


def run(work: Path, quick: bool) -> common.Section:
    repeats = 1 if quick else 5
    rows, figures, loads = [], {}, {}
    for task, (warmup, window) in WINDOWS.items():
        if quick:
            warmup, window = 2, 4
        project, package = common.render(work, task)
        spec = dict(work=str(work), project=str(project), package=package)
        spec |= dict(warmup=warmup, window=window)
        results = common.compare("throughput", spec, ["hand-written", "generated"], repeats)
        loads |= {f"{task} {c}": runs for c, runs in results.items()}
        hand, ours = results["hand-written"], results["generated"]
        rate = {c: common.median(runs, "samples_per_s") for c, runs in results.items()}
        figures[f"{task}_ratio"] = ratio = rate["generated"] / rate["hand-written"]
        rows.append(
            [task, common.fmt(rate["hand-written"], 1), common.fmt(rate["generated"], 1),
             common.fmt(ratio, 3),
             f"{common.spread(hand, 'samples_per_s')} / {common.spread(ours, 'samples_per_s')}",
             f"{ours[0]['workers']:.0f} / {ours[0]['threads']:.0f}"]
        )  # fmt: skip
    return common.Section(
        title="2. Throughput on the generated models",
        target=f"generated samples/s >= {TARGET} x hand-written's",
        columns=["Model (defaults)", "hand-written samples/s", "generated samples/s", "ratio",
                 "spread (hand / generated)", "workers / threads"],
        rows=rows,
        figures=figures,
        met=all(ratio >= TARGET for ratio in figures.values()),
        notes=[
            "Steps timed per run after warm-up steps (CNN / LM): "
            + " / ".join(f"{w} after {u}" for u, w in WINDOWS.values())
            + f"; batch 64, {repeats} interleaved run(s) per contender; spread = min-max "
            "samples/s over the runs.",
            common.load_note(loads),
        ],
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    import torch

    project = common.import_project(spec)
    clock = common.StepClock(spec["warmup"], spec["window"])
    args = [
        f"max_steps={clock.steps_needed}",
        f"runs_dir={Path(spec['work']) / 'runs'}",
        f"run_name={spec['contender']}-{Path(spec['out']).stem}",
    ]
    cfg = project.config.load_config(args)
    workers, _ = project.device.cpu_budget(torch.device("cpu"), cfg.data.num_workers, cfg.threads)
    if spec["contender"] == "generated":
        common.run_generated(project, args, clock)
    else:
        common.hand_written_loop(common.same_setup(project, cfg), clock)
    return {
        "samples_per_s": cfg.data.batch_size / clock.seconds_per_step(),
        "workers": workers,
        "threads": torch.get_num_threads(),
    }


if __name__ == "__main__":
    common.worker_main(measure)
