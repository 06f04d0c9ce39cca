"""17. Sweeps that search: TPE with median pruning against random search without pruning.

On the photo crops of `benchmarks.imagesets` (3,000 train / 1,000 val crops of 10 real photos,
at `data.image_size=8`: small images, so that a sweep of ten trials takes minutes on two busy
cores), the generated project's sweep command searches `optim.lr`, `optim.weight_decay` and
`model.dropout` with the same budget of trials, three times each with sampler seeds 0, 1, 2:
`sampler = "tpe"` with `pruner = "median"` against `sampler = "random"` with `pruner = "none"`.
Recorded: the best validation accuracy each sweep found (its best trial's `best_val_acc`), and
each sweep's wall time (the command in a fresh interpreter, one worker, one thread a run).

Needs scikit-learn and scikit-image to build the photo crops (the quick check uses the drawn
shapes instead, which need only Pillow).
"""

from __future__ import annotations

import csv
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

TRIALS, EPOCHS, IMAGE_SIZE, SEEDS = 10, 4, 8, (0, 1, 2)
PRUNE_AFTER = 3  # trials that run to their end before the median pruner prunes
TARGET_RATIO = 0.7
SPACE = """[space]
optim.lr = { log_uniform = [1e-4, 3e-1] }
optim.weight_decay = { log_uniform = [1e-5, 1e-1] }
model.dropout = { uniform = [0.0, 0.5] }
"""
KINDS = {"tpe + median pruning": ("tpe", "median"), "random, no pruning": ("random", "none")}


def sweep_file(path: Path, source: Path, sampler: str, pruner: str, seed: int, quick: bool) -> Path:
    trials, epochs, size = (2, 1, 16) if quick else (TRIALS, EPOCHS, IMAGE_SIZE)
    lines = [
        f"trials = {trials}",
        f'sampler = "{sampler}"',
        f'pruner = "{pruner}"',
        f"prune_after = {PRUNE_AFTER}",
        f"seed = {seed}",
        "[fixed]",
        f'data.source = "{source}"',
        "data.test_fraction = 0",
        f"data.image_size = {size}",
        f"epochs = {epochs}",
        "data.num_workers = 0",
        "threads = 1",
        'device = "cpu"',
        *(["max_steps = 3"] if quick else []),
        SPACE,
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def one_sweep(project: Path, package: str, file: Path, out: Path) -> dict[str, float]:
    """Run a sweep in a fresh interpreter; its wall time, best val_acc and trial counts."""
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", f"{package}.sweep", str(file), "--dir", str(out)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        why = done.stderr[-2000:]
        raise common.BenchmarkError(f"sweep {file.name} exited {done.returncode}: {why}")
    rows = list(csv.DictReader((out / "results.csv").read_text(encoding="utf-8").splitlines()))
    best = max(float(row["best_val_acc_mean"]) for row in rows)
    pruned = done.stdout.count(" pruned: ")
    return {"seconds": seconds, "best": best, "finished": len(rows), "pruned": pruned}


def run(work: Path, quick: bool) -> common.Section:
    from benchmarks import imagesets

    project, package = common.render(work, "classification")
    real = all(map(common.has_module, ["sklearn", "skimage"]))
    name = "photos" if real and not quick else "shapes"
    imagesets.build(work / "imagesets", name)
    source = work / "imagesets" / name
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    rows = []
    for seed in SEEDS[:1] if quick else SEEDS:
        for kind, (sampler, pruner) in KINDS.items():
            file = sweep_file(work / f"{sampler}-{seed}.toml", source, sampler, pruner, seed, quick)
            result = one_sweep(project, package, file, work / "sweeps" / f"{sampler}-{seed}")
            results[kind].append(result)
            print(f"{kind}, seed {seed}: {result}", flush=True)
            rows.append(
                [
                    kind,
                    str(seed),
                    f"{result['best']:.4f}",
                    f"{result['finished']:.0f}",
                    f"{result['pruned']:.0f}",
                    f"{result['seconds']:.0f}",
                ]
            )
    tpe, rnd = results["tpe + median pruning"], results["random, no pruning"]
    best_tpe, best_rnd = (statistics.fmean(r["best"] for r in rs) for rs in (tpe, rnd))
    time_tpe, time_rnd = (sum(r["seconds"] for r in rs) for rs in (tpe, rnd))
    ratio = time_tpe / time_rnd
    for kind, rs in results.items():
        mean_best, total = statistics.fmean(r["best"] for r in rs), sum(r["seconds"] for r in rs)
        rows.append([kind, "mean / total", f"{mean_best:.4f}", "", "", f"{total:.0f}"])
    notes = [
        f"Each sweep: {TRIALS} trials over optim.lr (log 1e-4..0.3), optim.weight_decay "
        f"(log 1e-5..0.1) and model.dropout (0..0.5); {EPOCHS} epochs a trial, "
        f"data.image_size={IMAGE_SIZE}, one worker, one thread a run, on the CPU. TPE samples at "
        f"random for its first {TRIALS // 3} trials; the median pruner prunes once {PRUNE_AFTER} "
        "trials have run to their end.",
        "best: the highest `best_val_acc` (the best epoch's validation accuracy) among the "
        "sweep's finished trials; finished and pruned: trial counts; seconds: the sweep "
        "command's wall time, its trials trained one after another in its worker process.",
        f"Time ratio, TPE + pruning over random: {ratio:.2f} (target <= {TARGET_RATIO}); best "
        f"accuracy, mean over the 3 sweeps: {best_tpe:.4f} against {best_rnd:.4f}.",
    ]
    return common.Section(
        title="17. Sweeps that search",
        target="TPE + median pruning finds at least random search's best val acc in "
        f"<= {TARGET_RATIO}x its time, with the same budget of trials",
        columns=["sweep", "sampler seed", "best val acc", "finished", "pruned", "seconds"],
        rows=rows,
        figures={"ratio": ratio, "best_tpe": best_tpe, "best_random": best_rnd},
        met=None if quick else (best_tpe >= best_rnd and ratio <= TARGET_RATIO),
        notes=notes,
    )


if __name__ == "__main__":
    common.script_main(__doc__, run, "sweeps")
