"""4. Generation: `ptscaffold new --defaults` vs a bare `copier copy` of the same template.

Both are timed as whole processes, the way a person runs them: interpreter start-up, imports,
rendering, and for ptscaffold its template cache and the project's `git init` + first commit.
copier renders from a plain (non-git) copy of the same copier.yml, template/ and hooks/, with
the same answers. ptscaffold's template cache is warmed once first (as after a first use);
the first, cold run is shown separately.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import common

TARGET = 1.3
TEMPLATE_PATHS = ("copier.yml", "template", "hooks")
COMMANDS = {  # run as `python -m ...`, the same answers for both
    "copier copy": "copier copy --defaults --data project_name=bench {src} {dest}",
    "ptscaffold new": "ptscaffold new {dest} --defaults --data project_name=bench",
}


def run(work: Path, quick: bool) -> common.Section:
    repeats = 1 if quick else 5
    root = work / "generation"
    shutil.rmtree(root, ignore_errors=True)
    source = root / "template-copy"
    source.mkdir(parents=True)
    for name in TEMPLATE_PATHS:
        if (common.REPO / name).is_dir():
            skip = shutil.ignore_patterns("__pycache__")
            shutil.copytree(common.REPO / name, source / name, ignore=skip)
        else:
            shutil.copy2(common.REPO / name, source / name)
    path = [str(common.REPO / "generator"), os.environ.get("PYTHONPATH", "")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, path)),
        "PTSCAFFOLD_CACHE_DIR": str(root / "cache" / "ptscaffold"),
        "COPIER_CACHE_DIR": str(root / "cache" / "copier"),
    }
    runs = iter(range(10**6))

    def timed(contender: str) -> dict[str, float]:
        dest = str(root / f"project-{next(runs)}")
        command = [arg.format(src=source, dest=dest) for arg in COMMANDS[contender].split()]
        common.wait_for_quiet()
        with common.LoadMeter() as load:
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", *command], env=env, capture_output=True)
            seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise common.BenchmarkError(f"{contender} failed: {proc.stderr.decode()[-2000:]}")
        return {"seconds": seconds, "background_cores": load.cores}

    cold = timed("ptscaffold new")["seconds"]  # builds the template cache
    timed("copier copy")  # warms the OS file cache and the .pyc files alike
    results = common.interleave(COMMANDS, repeats, timed)
    seconds = {c: common.median(runs, "seconds") for c, runs in results.items()}
    ratios = common.paired(results, "seconds", "ptscaffold new", "copier copy")
    ratio = statistics.median(ratios)
    copier = seconds["copier copy"]
    rows = [
        ["`copier copy`", common.fmt(copier, 3), "1.00", "-"],
        ["`ptscaffold new`", common.fmt(seconds["ptscaffold new"], 3), common.fmt(ratio, 2),
         common.middle_half(ratios, 2)],
        ["`ptscaffold new`, cold template cache (first run, once)", common.fmt(cold, 3),
         common.fmt(cold / copier, 2), "-"],
    ]  # fmt: skip
    return common.Section(
        title="4. Generation",
        target=f"`ptscaffold new --defaults` <= {TARGET}x a bare `copier copy`",
        columns=["Command (whole process)", "seconds", "x copier", "x copier, middle half"],
        rows=rows,
        figures={"ratio": ratio, "copier_s": copier, "cold_s": cold},
        met=ratio <= TARGET,
        notes=[
            f"{repeats} interleaved run(s) each; x copier = median over the rounds of the pair's "
            "ratio. ptscaffold's time includes the project's git set-up (init, add, commit).",
            common.load_note(results),
        ],
    )
