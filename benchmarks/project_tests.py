"""5. The generated test suite's wall time: what a user waits for on every commit.

`python -m pytest -q` in a freshly rendered project, timed as a whole process: the default
project of each task (target 30 s), and the heaviest render, every feature that starts processes
or compiles (target 150 s). The slowest tests (pytest's `--durations`) are listed, so a miss says
where the time goes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import common

TARGET_S = 30.0
HEAVY_TARGET_S = 150.0
PYTEST = "-m pytest -q -p no:cacheprovider --durations=5"  # what a user runs, plus the slowest
# (label, task, answers, target): the defaults, then the render whose own suite is the longest:
# FSDP (sharded checkpoints, torchrun) with compile, activation checkpointing, bf16 and a tracker
SUITES = [
    ("classification", "classification", {}, TARGET_S),
    ("language_model", "language_model", {}, TARGET_S),
    (
        "heaviest",
        "language_model",
        {
            "amp": "bf16",
            "compile": True,
            "activation_checkpointing": True,
            "nan_guard": True,
            "distributed": "fsdp",
            "slurm": True,
            "logger": "mlflow",
        },
        HEAVY_TARGET_S,
    ),
]
DURATION = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(\S+)", re.MULTILINE)


def run(work: Path, quick: bool) -> common.Section:
    rows, figures, slowest, loads, missed = [], {}, [], {}, []
    for label, task, answers, target in SUITES if not quick else SUITES[:2]:
        # --quick runs one small, fast test file (both tasks have it), in the default project the
        # other benchmarks share (rendered once): it proves the benchmark works, not the figure
        project, _ = common.render(work, task, "" if quick else f"bench_{label}", **answers)
        selection = ["tests/test_metrics.py"] if quick else []
        common.wait_for_quiet()
        with common.LoadMeter() as load:
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, *PYTEST.split(), *selection],
                cwd=project,
                capture_output=True,
                text=True,
                timeout=900,
            )
            seconds = time.perf_counter() - start
        loads[label] = [{"background_cores": load.cores}]
        if proc.returncode != 0:
            raise common.BenchmarkError(f"{label} tests failed:\n{proc.stdout[-3000:]}")
        summary = proc.stdout.strip().splitlines()[-1].strip("= ")
        figures[f"{label}_s"] = seconds
        missed += [label] if seconds >= target else []
        rows.append([label, common.fmt(seconds, 1), f"{target:.0f}", summary])
        slowest += [
            f"{label}: {name} ({phase}) {float(s):.1f} s"
            for s, phase, name in DURATION.findall(proc.stdout)[:3]
        ]
    met = None if quick else not missed
    notes = ["Slowest tests: " + "; ".join(slowest), common.load_note(loads)]
    if met is False:
        notes.append(
            "Missed: see the slowest tests above. A process that must start as a user starts it "
            "(a sweep member, a torchrun rank) pays 2.5-3 s of torch import before its first step."
        )
    return common.Section(
        title="5. Generated test suite",
        target=(
            f"`python -m pytest -q` < {TARGET_S:.0f} s in a default project of each task, "
            f"< {HEAVY_TARGET_S:.0f} s in the heaviest render"
        ),
        columns=["Project", "wall seconds", "target", "pytest summary"],
        rows=rows,
        figures=figures,
        met=met,
        notes=notes,
    )
