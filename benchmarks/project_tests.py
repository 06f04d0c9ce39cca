"""5. The generated test suite's wall time, per task: what a user waits for on every commit.

`python -m pytest -q` in a freshly rendered default project, timed as a whole process.
The slowest tests (pytest's `--durations`) are listed, so a miss says where the time goes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import common

TARGET_S = 30.0
PYTEST = "-m pytest -q -p no:cacheprovider --durations=5"  # what a user runs, plus the slowest
TASKS = ["classification", "language_model"]
DURATION = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(\S+)", re.MULTILINE)


def run(work: Path, quick: bool) -> common.Section:
    rows, figures, slowest, loads = [], {}, [], {}
    for task in TASKS:
        project, _ = common.render(work, task)
        # --quick runs one small test file: it proves the benchmark works, not the figure
        selection = ["tests/test_config.py"] if quick else []
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
        loads[task] = [{"background_cores": load.cores}]
        if proc.returncode != 0:
            raise common.BenchmarkError(f"{task} tests failed:\n{proc.stdout[-3000:]}")
        summary = proc.stdout.strip().splitlines()[-1].strip("= ")
        figures[f"{task}_s"] = seconds
        rows.append([task, common.fmt(seconds, 1), summary])
        slowest += [
            f"{task}: {name} ({phase}) {float(s):.1f} s"
            for s, phase, name in DURATION.findall(proc.stdout)[:3]
        ]
    met = None if quick else all(s < TARGET_S for s in figures.values())
    notes = ["Slowest tests: " + "; ".join(slowest), common.load_note(loads)]
    if met is False:
        notes.append(
            "Missed: see the slowest tests above. Each test that trains in a child process pays "
            "2.5-3 s of start-up before its first step (import torch, then torch._dynamo, which "
            "the first optimizer imports)."
        )
    return common.Section(
        title="5. Generated test suite",
        target=f"`python -m pytest -q` in a default project < {TARGET_S:.0f} s per task",
        columns=["Task", "wall seconds", "pytest summary"],
        rows=rows,
        figures=figures,
        met=met,
        notes=notes,
    )
