"""2. Throughput of the real generated models (the CNN and the LM at their defaults, on CPU).

The generated `train` with every default (built-in data with its augmentation, the DataLoader
workers and torch threads `cpu_budget` picks, progress, metrics, NaN guard) against the script
a person writes by hand: `DataLoader(dataset, batch_size, shuffle=True)`, torch's own thread
count, and a bare loop over the same model, optimizer, schedule and clipping. The ratio is what
the generated project costs (or saves) on a real model: its loop and its loading choices both.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks import common

TARGET = 0.97
# (warm-up steps, timed steps) per run. The first 5-8 steps of a process run up to 1.5x slower
# (the allocator is still growing its pools). Several seconds of steps per run, so that a stall
# of the machine moves a run's figure by a percent, not ten
WINDOWS = {"classification": (20, 200), "language_model": (10, 70)}
# The built-in data, made this many times larger (same generator, same cost per sample) so
# that one epoch holds the whole window: no evaluation or checkpoint falls inside it
DATA_SCALE = {"classification": ("BUILTIN_SAMPLES", 5), "language_model": ("BUILTIN_SENTENCES", 3)}
CONTENDERS = ["hand-written", "generated"]
# glibc's malloc thresholds, fixed for both contenders as the generated README advises: with the
# adaptive ones, a process's allocation history can make every step fault its activations back
# in (a fifth of the step time), in either contender and by chance
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
BATCH = 64  # the default before 0 chose it from the data
# --quick: one warm-up step and the fewest timed steps a median needs, batches of 16 on the
# built-in data as it is (the few steps fit an epoch), one validation batch, forked children:
# it proves the benchmark runs, not the figure
QUICK = dict(warmup=1, window=2, batch=16, args=["val_batches=1"])


def run(work: Path, quick: bool) -> common.Section:
    repeats = 1 if quick else 5
    rows, figures, loads = [], {}, {}
    for task, (warmup, window) in WINDOWS.items():
        project, package = common.render(work, task)
        spec = dict(work=str(work), project=str(project), package=package, batch=BATCH, args=[])
        spec |= dict(warmup=warmup, window=window, data_scale=DATA_SCALE[task])
        if quick:
            spec |= QUICK | dict(data_scale=(DATA_SCALE[task][0], 1))
        # In new interpreters, as a user's run starts: a forked child's inherited heap slowed
        # the generated run's steps by a fifth here, and a fresh process's not at all (--quick
        # forks them, a few seconds sooner: its figures mean nothing anyway)
        results = common.compare(
            "throughput", spec, CONTENDERS, repeats, fresh=not quick, env=MALLOC
        )
        loads |= {f"{task} {c}": runs for c, runs in results.items()}
        ratios = common.paired(results, "samples_per_s", "generated", "hand-written")
        step_ratios = common.paired(
            results, "median_step_samples_per_s", "generated", "hand-written"
        )
        figures[f"{task}_ratio"] = ratio = statistics.median(ratios)
        rate = {c: common.median(runs, "samples_per_s") for c, runs in results.items()}
        setups = " vs ".join(
            ", ".join(sorted({f"{r['workers']:.0f} / {r['threads']:.0f}" for r in results[c]}))
            for c in CONTENDERS
        )  # more than one pair for a contender means its choice varied from run to run
        rows.append(
            [task, common.fmt(rate["hand-written"], 1), common.fmt(rate["generated"], 1),
             common.fmt(ratio, 3), common.middle_half(ratios),
             common.fmt(statistics.median(step_ratios), 3), setups]
        )  # fmt: skip
    return common.Section(
        title="2. Throughput on the generated models",
        target=f"generated samples/s >= {TARGET} x hand-written's",
        columns=["Model (defaults)", "hand-written samples/s", "generated samples/s", "ratio",
                 "ratio, middle half", "ratio of median steps",
                 "workers / threads, hand-written vs generated"],
        rows=rows,
        figures=figures,
        met=all(ratio >= TARGET for ratio in figures.values()),
        notes=[
            "Steps timed per run after warm-up steps (CNN / LM): "
            + " / ".join(f"{w} after {u}" for u, w in WINDOWS.values())
            + f"; batch 64, {repeats} interleaved run(s) per contender, on the built-in data "
            "made larger (x" + " / x".join(str(k) for _, k in DATA_SCALE.values()) + ") so that "
            "one epoch holds the window. samples/s = batch x steps "
            "/ the window's wall time; ratio = median over the rounds of generated / hand-written "
            "in the same round; middle half = its interquartile range. The ratio of median steps "
            "is a cross-check that ignores the machine's rare long stalls.",
            "The built-in data costs 20-60 us a sample, so the generated `cpu_budget` loads it in "
            "the training process and gives torch every core, as the hand-written script does.",
            "Both contenders run with glibc's malloc thresholds fixed in the environment "
            "(MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_), as the generated README advises: "
            "with the adaptive ones, a process's allocation history can make every step fault its "
            "activations back in, in either contender and by chance.",
            common.load_note(loads),
        ],
    )  # fmt: skip


# ---- worker -------------------------------------------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, float]:
    import torch

    project = common.import_project(spec)
    name, scale = spec["data_scale"]
    setattr(project.data, name, getattr(project.data, name) * scale)
    clock = common.StepClock(spec["warmup"], spec["window"])
    args = [
        f"data.batch_size={spec['batch']}",
        "data.test_fraction=0",
        *spec["args"],
        f"max_steps={clock.steps_needed}",
        f"runs_dir={Path(spec['work']) / 'runs'}",
        f"run_name={spec['contender']}-{Path(spec['out']).stem}",
    ]
    cfg = project.config.load_config(args)
    if spec["contender"] == "generated":
        workers = common.run_generated_loader(project, args, clock).num_workers
    else:
        setup = common.same_setup(project, cfg, plain=True)
        workers = setup.loader.num_workers
        common.hand_written_loop(setup, clock)
    return {
        "samples_per_s": cfg.data.batch_size / clock.seconds_per_step(),
        "median_step_samples_per_s": cfg.data.batch_size / clock.median_step_seconds(),
        "workers": workers,
        "threads": torch.get_num_threads(),
    }


if __name__ == "__main__":
    common.worker_main(measure)
