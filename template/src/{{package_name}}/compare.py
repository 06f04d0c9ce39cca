"""Compare runs from their folders: `python -m <package>.compare runs/a runs/b | runs | runs/sweeps/x`.

compare.csv (exact values) and compare.md: the config keys that differ, the best and final value
of the monitored validation metric (`monitor`), its test score where the runs have a test split,
steps, wall time and throughput, best first; runs that differ only in seed or fold share a row
(mean ± std). A run without result.json is `running` while its process lives, else `killed`; a
sweep's trial that its pruner stopped is `pruned`. With matplotlib, every validation curve in
compare.png. Exit codes: 0 done, 2 no run.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .config import MONITORS, NAMING, RESUMES, Config, flatten
from .engine.record.metrics import read_metrics
from .engine.record.tables import MISSING, Row, pyplot, save_png, write_table
from .runtime import is_alive
from .runtime.commands import command_parser

# Keys every run sets apart from the others, which say nothing of how it trained
BOOKKEEPING = {*NAMING, RESUMES, "init_weights"}
# Keys whose runs are repetitions of one setting: aggregated, not compared
REPEATS = {"seed", "data.fold"}
NUMBERS = ["best", "final", "test", "steps", "wall_s", "samples_per_s"]
LEGEND = 10  # rows that the plot names in a legend; more are coloured by rank


class CompareError(ValueError):
    """No run to compare, in one line for the user."""


@dataclass
class Run:
    folder: Path
    config: dict[str, Any]  # flattened: {"optim.lr": 0.001, ...}
    status: str  # finished, running or killed
    curve: list[tuple[int, float]]  # (step, the monitored metric) at each evaluation
    numbers: dict[str, float]  # those of NUMBERS that the run has recorded


def find_runs(paths: list[Path]) -> list[Path]:
    """Each path that is a run folder (it has config.json), and the run folders inside the others."""
    found: list[Path] = []
    for path in paths:
        if (path / "config.json").is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted(p.parent for p in path.glob("*/config.json"))
        else:
            raise CompareError(f"{path}: no such run or folder")
    if not found:
        raise CompareError(f"no run folder (one with config.json) in {' '.join(map(str, paths))}")
    return list(dict.fromkeys(found))


def monitored(folders: list[Path]) -> str:
    """The metric the runs monitor (`monitor` in their config; the most common where they differ)."""
    configs = [json.loads((folder / "config.json").read_text(encoding="utf-8")) for folder in folders]
    default = Config().monitor  # a run from before `monitor` existed
    names = [config.get("monitor", default) for config in configs]
    return max(names, key=names.count)


def read_run(folder: Path, metric: str) -> Run:
    config = dict(flatten(json.loads((folder / "config.json").read_text(encoding="utf-8"))))
    metrics_file, result_file = folder / "metrics.csv", folder / "result.json"
    series = read_metrics(metrics_file) if metrics_file.is_file() else {}
    curve = series.get(metric, [])
    result = json.loads(result_file.read_text(encoding="utf-8")) if result_file.is_file() else None
    numbers: dict[str, float] = {}
    if curve:
        numbers["best"] = (max if MONITORS[metric] else min)(value for _, value in curve)
        numbers["final"] = curve[-1][1]
    steps = [step for points in series.values() for step, _ in points]
    if result is not None and f"test_{metric[4:]}" in result:  # the test split's, at the end
        numbers["test"] = result[f"test_{metric[4:]}"]
    if result is not None or steps:
        numbers["steps"] = result["step"] if result is not None else max(steps)
    if speeds := [value for _, value in series.get("samples_per_s", [])]:
        numbers["samples_per_s"] = statistics.fmean(speeds)
    environment = json.loads((folder / "environment.json").read_text(encoding="utf-8"))
    if result is not None and "wall_s" in result:  # the whole run's, resumes included
        numbers["wall_s"] = result["wall_s"]
    elif metrics_file.is_file():
        # Since this run (or its last resume) started, to its last record
        started = datetime.strptime(environment["started"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
        last = (result_file if result is not None else metrics_file).stat().st_mtime
        numbers["wall_s"] = max(0.0, last - started)
    # A sweep's pruned trial stopped on purpose: pruned.json says at which evaluation and why
    status = "pruned" if (folder / "pruned.json").is_file() else "finished" if result is not None else None
    alive = "pid" in environment and is_alive(environment.get("host", ""), environment["pid"])
    status = status or ("running" if alive else "killed")
    return Run(folder, config, status, curve, numbers)


def group(runs: list[Run], metric: str) -> tuple[list[Row], list[str]]:
    """One row per setting (the values of the keys that differ, REPEATS aside), best first by the
    mean best metric; and those keys."""
    names = dict.fromkeys(key for run in runs for key in run.config if key not in BOOKKEEPING | REPEATS)
    keys = [key for key in names if len({json.dumps(run.config.get(key)) for run in runs}) > 1]
    rows: dict[str, Row] = {}
    for run in runs:
        setting = {key: json.dumps(run.config.get(key)) for key in keys}
        row = rows.setdefault(json.dumps(setting), Row(setting, [], {}, {}))
        row.runs.append(run)
        for column, value in run.numbers.items():
            row.numbers.setdefault(column, []).append(value)
    for row in rows.values():
        statuses = [run.status for run in row.runs]
        counts = {s: statuses.count(s) for s in ("finished", "pruned", "running", "killed") if s in statuses}
        status = ", ".join(f"{n} {s}" for s, n in counts.items()) if len(statuses) > 1 else statuses[0]
        row.after = {"runs": " ".join(run.folder.name for run in row.runs), "status": status}

    def rank(row: Row) -> tuple[bool, float]:
        mean = statistics.fmean(row.numbers.get("best", [0.0]))
        return "best" not in row.numbers, -mean if MONITORS[metric] else mean

    return sorted(rows.values(), key=rank), keys


def write_curves(rows: list[Row], keys: list[str], metric: str, out: Path) -> bool:
    """Every run's validation curve, a colour per row (beyond LEGEND rows, dark for the best to
    light, without a legend), dashed if not finished; False without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    many = len(rows) > LEGEND
    colours = plt.get_cmap("viridis" if many else "tab10")
    for i, row in enumerate(rows):
        colour = colours(i / (len(rows) - 1)) if many else colours(i)
        label = " ".join(f"{key}={row.setting[key]}" for key in keys) or row.runs[0].folder.name
        for run in row.runs:
            if run.curve:
                steps, values = zip(*run.curve, strict=True)
                style = "-" if run.status == "finished" else "--"
                ax.plot(steps, values, style, color=colour, marker="o", markersize=3, label=label)
                label = None  # one legend entry a row
    ax.set(xlabel="step", ylabel=metric)
    if many:
        ax.set_title(f"{len(rows)} rows of compare.md, best (dark) to worst (light)")
    elif ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    save_png(fig, out)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = command_parser("compare", __doc__)
    parser.add_argument("paths", type=Path, nargs="+", help="run folders, a runs folder or a sweep folder")
    parser.add_argument(
        "--out", type=Path, help="the folder to write to (default: the folder given, else the runs' parent)"
    )
    args = parser.parse_args(argv)
    one_folder = len(args.paths) == 1 and not (args.paths[0] / "config.json").is_file()
    out = args.out or (args.paths[0] if one_folder else args.paths[0].parent)
    try:
        folders = find_runs(args.paths)
        metric = monitored(folders)
        rows, keys = group([read_run(folder, metric) for folder in folders], metric)
    except CompareError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    better = "higher" if MONITORS[metric] else "lower"
    heading = f"# {metric} ({better} is better), best first; mean ± std over runs of one seed or fold"
    columns = [c for c in NUMBERS if c != "test" or any(c in row.numbers for row in rows)]
    print(write_table(out, "compare", heading, rows, (keys, "n", columns, ["runs", "status"])), end="")
    print(f"written: {out / 'compare.md'}, compare.csv")
    drawn = write_curves(rows, keys, metric, out / "compare.png")
    print(f"written: {out / 'compare.png'}" if drawn else f"compare.png skipped: {MISSING}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
