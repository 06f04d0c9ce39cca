"""14. Comparing runs and finding a learning rate: `compare` over 100 runs, `lr_find` against the
default rate.

    python benchmarks/runtools.py [--tiny] [--work DIR]

(a) compare: one real run of the rendered classification project (a 320-image `.npz` of the
built-in patterns, 5 epochs: 5 evaluations, a metric row every 2 steps) is copied into 100 run
folders, each with its own `optim.lr` (25 rates) and `seed` (4 seeds) in config.json and its
metric values scaled by a factor of its own in metrics.csv and result.json: the records of 100
finished runs, 25 settings of 4 seeds. Timed: `python -m PACKAGE.compare RUNS_DIR` as a user runs
it, in a fresh interpreter (imports, reading, the table, the PNG with matplotlib), best of 3.

(b) lr_find: on the built-in data and on the real photo crops of `benchmarks.imagesets.photos`
(3,000 train / 1,000 val crops of 10 photos, read at 32 px), `python -m PACKAGE.lr_find` with
the defaults (100 steps, 1e-7 to 10), then the default command twice, at the default `optim.lr`
and at the suggested one, same epochs (the default's choice) and seed: the final val accuracy of
each. Every command a fresh interpreter, as a user runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

RATES = [1e-4 * 10 ** (i / 8) for i in range(25)]  # 1e-4 to 1e-1
SEEDS = [1, 2, 3, 4]
TARGET_S = 2.0
# --quick: each command timed once, not best of 3, and the finder's range test in 40 steps, not
# its default 100 (still enough for the loss to fall, so that it suggests a rate)
QUICK_FINDER_STEPS = 40


def command(project: Path, package: str, module: str, *args: str) -> tuple[str, float]:
    """`python -m PACKAGE.MODULE ARGS` in the project, as a user runs it: (stdout, seconds)."""
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", f"{package}.{module}", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise common.BenchmarkError(
            f"{module} {args} exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done.stdout, seconds


def hundred_runs(work: Path, project: Path, package: str, quick: bool) -> Path:
    """100 run folders: one real run's records, each copy its own rate, seed and values."""
    sys.path.insert(0, str(project / "src"))
    import numpy as np

    images, labels = __import__(f"{package}.data.datasets", fromlist=["x"]).synthetic_images(320)
    data = work / "tiny.npz"
    np.savez(data, images=images, labels=labels)
    runs = work / "compared"
    epochs = "1" if quick else "5"
    args = [
        f"data.source={data}",
        "data.test_fraction=0",
        "data.batch_size=16",
        "model.widths=[8,16]",
    ]
    args += [f"epochs={epochs}"]
    args += ["data.num_workers=0", "log_interval=2", f"runs_dir={work / 'one'}", "run_name=real"]
    command(project, package, "train", *args)
    real = work / "one" / "real"
    for i, (lr, seed) in enumerate((lr, seed) for lr in RATES for seed in SEEDS):
        folder = runs / f"run-{i:03d}"
        shutil.copytree(real, folder, ignore=shutil.ignore_patterns("checkpoints"))
        config = json.loads((folder / "config.json").read_text())
        config["optim"]["lr"], config["seed"], config["run_name"] = lr, seed, folder.name
        (folder / "config.json").write_text(json.dumps(config))
        scale = 0.5 + i / 200
        lines = (folder / "metrics.csv").read_text().splitlines()
        rows = [line.rsplit(",", 1) for line in lines[1:]]
        scaled = [f"{head},{float(value) * scale!r}" for head, value in rows]
        (folder / "metrics.csv").write_text("\n".join([lines[0], *scaled]) + "\n")
        result = json.loads((folder / "result.json").read_text())
        result = {k: v * scale if isinstance(v, float) else v for k, v in result.items()}
        (folder / "result.json").write_text(json.dumps(result))
    return runs


# Reading the 100 runs and writing the tables (compare.csv and .md) in one process, without a plot
READ_ONLY = """
import sys, tempfile, time
from pathlib import Path
from PACKAGE import compare
from PACKAGE.engine.record.tables import write_table
start = time.perf_counter()
folders = compare.find_runs([Path(sys.argv[1])])
metric = compare.monitored(folders)
rows, keys = compare.group([compare.read_run(folder, metric) for folder in folders], metric)
header = (keys, "n", compare.NUMBERS, ["runs", "status"])
write_table(Path(tempfile.mkdtemp()), "compare", "# compare", rows, header)
print(time.perf_counter() - start)
"""


def time_reading(project: Path, package: str, runs: Path, tries: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    code = READ_ONLY.replace("PACKAGE", package)
    times = []
    for _ in range(tries):
        done = subprocess.run(
            [sys.executable, "-c", code, str(runs)], env=env, capture_output=True, text=True
        )
        times.append(float(done.stdout))
    return min(times)


def time_compare(project: Path, package: str, runs: Path, tries: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(tries):
        out, seconds = command(
            project, package, "compare", str(runs), "--out", str(runs.parent / "table")
        )
        times.append(seconds)
    return min(times), out


def finder_against_default(
    project: Path, package: str, work: Path, name: str, args: list[str], finder: list[str]
) -> dict:
    """The suggested rate (`finder`: the finder's own options, put before the settings, after
    which its parser takes no option), and the final val_acc of the default command at each rate."""
    runs = work / "runs" / name
    out, _ = command(project, package, "lr_find", *finder, *args, f"runs_dir={runs}")
    suggested = float(out.strip().splitlines()[-1].removeprefix("optim.lr="))
    found = {"suggested": suggested}
    for who, rate in (("default", None), ("suggested", suggested)):
        lr = [f"optim.lr={rate}"] if rate else []
        _, seconds = command(
            project, package, "train", *args, *lr, f"runs_dir={runs}", f"run_name={who}"
        )
        result = json.loads((runs / who / "result.json").read_text())
        config = json.loads((runs / who / "config.json").read_text())
        found |= {f"{who}_acc": result["val_acc"], f"{who}_lr": config["optim"]["lr"]}
        found |= {f"{who}_epochs": config["epochs"], f"{who}_s": seconds}
    return found


def run(work: Path, quick: bool) -> common.Section:
    from benchmarks import imagesets, realimages

    project, package = common.render(work, "classification")
    runs = hundred_runs(work, project, package, quick)
    tries = 1 if quick else 3
    seconds, printed = time_compare(project, package, runs, tries)
    reading = time_reading(project, package, runs, tries)
    rows = [
        ["compare, 100 runs (25 settings x 4 seeds)", "the command", "", "", "", f"{seconds:.2f}"],
        ["compare, 100 runs", "reading and the tables alone", "", "", "", f"{reading:.2f}"],
    ]
    figures = {"compare_100_s": seconds, "compare_read_s": reading}
    figures["compare_rows"] = float(printed.count("| run-"))
    tiny = ["epochs=1", "max_steps=3", "data.batch_size=16", "model.widths=[8,16]"] if quick else []
    finder = ["--steps", str(QUICK_FINDER_STEPS)] if quick else []
    sets = {"builtin": ["data.source=builtin"]}
    if not quick and all(map(common.has_module, realimages.NEEDS["photos"])):
        imagesets.build(work / "imagesets", "photos")
        sets["photos"] = [f"data.source={work / 'imagesets' / 'photos'}", "data.image_size=32"]
    for name, args in sets.items():
        found = finder_against_default(project, package, work, name, [*args, *tiny], finder)
        for who in ("default", "suggested"):
            rows.append(
                [f"lr_find, {name}", who, f"{found[f'{who}_lr']:.2g}",
                 common.fmt(found[f"{who}_acc"], 3), str(found[f"{who}_epochs"]),
                 f"{found[f'{who}_s']:.0f}"]
            )  # fmt: skip
        figures |= {f"{name}_suggested_lr": found["suggested"]}
        figures |= {
            f"{name}_default_acc": found["default_acc"],
            f"{name}_suggested_acc": found["suggested_acc"],
        }
    notes = [
        "compare: one real run (320 built-in-pattern images as .npz, batch 16, 5 epochs, a "
        "metric row every 2 steps) copied into 100 folders, each given its own optim.lr (25 "
        "rates, 1e-4 to 0.1) and seed (1-4) in config.json and its metrics.csv and result.json "
        "values scaled by 0.5 + i/200; checkpoints left out. Timed: `python -m PACKAGE.compare "
        "DIR` in a fresh interpreter, best of 3, the PNG included (importing matplotlib is most of "
        "it); then reading the records and building both tables alone, in one process, best of 3.",
        "lr_find: `python -m PACKAGE.lr_find` at its defaults (100 steps from 1e-7 to 10), then "
        "the default command at the default rate and at the suggested one, the same epochs "
        "(chosen by epochs=0) and seed 1337; one run each.",
    ]
    return common.Section(
        title="14. Comparing runs and finding a learning rate",
        target=f"compare reads 100 runs' records in <= {TARGET_S:.0f} s; "
        "the finder's rate against the default (no target)",
        columns=["What", "who", "optim.lr", "final val acc", "epochs", "seconds"],
        rows=rows,
        figures=figures,
        met=seconds <= TARGET_S,
        notes=notes,
    )


if __name__ == "__main__":
    common.script_main(__doc__, run, "runtools")
