"""Compare runs side by side, from what each run recorded in its folder (no tracker needed).

    python -m <package>.compare runs/a runs/b        the runs named
    python -m <package>.compare runs                 every run in a folder
    python -m <package>.compare runs/sweeps/sweep    a sweep's members, or a cross-validation's folds

One table, best first: the config keys whose values differ between the runs, the best and the
final validation metric, steps, wall time and throughput; runs that differ only in their seed
(or their fold) share a row, as mean ± std. A run without result.json is shown as `running`
when its process (environment.json's host and pid) is alive, else `killed` (killed, preempted
or failed: `resume=auto` continues it). Written as compare.csv (exact values), compare.md and,
with matplotlib (the `plot` extra), compare.png: the validation curves of every run overlaid.

Exit codes: 0 done, 2 no run found.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import os
import platform
import statistics
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import TASK
from .config import flatten
from .record.metrics import read_metrics
from .runtime.files import write_whole

# The validation metric that ranks runs, and whether higher is better
METRIC, MAXIMIZE = ("val_acc", True) if TASK == "classification" else ("val_loss", False)
# Keys every run sets apart from the others, which say nothing of how it trained
BOOKKEEPING = {"run_name", "runs_dir", "resume"}
# Keys whose runs are repetitions of one setting: aggregated, not compared
REPEATS = {"seed", "data.fold"}
NUMBERS = ["best", "final", "steps", "wall_s", "samples_per_s"]
STATUSES = ("finished", "running", "killed")
LEGEND = 10  # rows that the plot names in a legend; more are coloured by rank


class CompareError(ValueError):
    """No run to compare, worded as one line for the user."""


@dataclass
class Run:
    folder: Path
    config: dict[str, Any]  # flattened: {"optim.lr": 0.001, ...}
    status: str  # finished, running or killed
    curve: list[tuple[int, float]]  # (step, METRIC) at each evaluation
    numbers: dict[str, float]  # NUMBERS that the run has recorded


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


def read_run(folder: Path) -> Run:
    config = dict(flatten(json.loads((folder / "config.json").read_text(encoding="utf-8"))))
    metrics_file = folder / "metrics.csv"
    series = read_metrics(metrics_file) if metrics_file.is_file() else {}
    curve = series.get(METRIC, [])
    result_file = folder / "result.json"
    result = json.loads(result_file.read_text(encoding="utf-8")) if result_file.is_file() else None
    numbers: dict[str, float] = {}
    if curve:
        numbers["best"] = (max if MAXIMIZE else min)(value for _, value in curve)
        numbers["final"] = curve[-1][1]
    steps = [step for points in series.values() for step, _ in points]
    if result is not None or steps:
        numbers["steps"] = result["step"] if result is not None else max(steps)
    speeds = [value for _, value in series.get("samples_per_s", [])]
    if speeds:
        numbers["samples_per_s"] = statistics.fmean(speeds)
    environment = json.loads((folder / "environment.json").read_text(encoding="utf-8"))
    if metrics_file.is_file():
        # Since this run (or its last resume) started, to its last record
        started = datetime.strptime(environment["started"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
        last = (result_file if result is not None else metrics_file).stat().st_mtime
        numbers["wall_s"] = max(0.0, last - started)
    status = "finished" if result is not None else "running" if is_alive(environment) else "killed"
    return Run(folder, config, status, curve, numbers)


def is_alive(environment: dict[str, Any]) -> bool:
    """Whether the process that writes the run still runs (on this machine; elsewhere, presumed)."""
    if "pid" not in environment:
        return False
    if environment.get("host") != platform.node():
        return True  # written on another machine: it cannot be asked from here
    if os.name == "nt":  # os.kill would terminate it there: ask Windows instead
        import ctypes

        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x1000, False, environment["pid"])  # query access only
        if not handle:
            return False
        code = ctypes.c_ulong()
        kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(environment["pid"], 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, but is another user's
        return True
    return True


def differing_keys(runs: list[Run]) -> list[str]:
    """The config keys whose values differ between the runs, bookkeeping left out."""
    keys = dict.fromkeys(key for run in runs for key in run.config)
    values = {key: {json.dumps(run.config.get(key)) for run in runs} for key in keys}
    return [key for key in keys if len(values[key]) > 1 and key not in BOOKKEEPING]


@dataclass
class Row:
    """One setting: the runs that differ only in REPEATS."""

    runs: list[Run]
    setting: dict[str, Any]  # the differing keys' values

    def values(self, column: str) -> list[float]:
        return [run.numbers[column] for run in self.runs if column in run.numbers]

    def status(self) -> str:
        if len(self.runs) == 1:
            return self.runs[0].status
        counts = {status: sum(run.status == status for run in self.runs) for status in STATUSES}
        return ", ".join(f"{n} {status}" for status, n in counts.items() if n)


def group(runs: list[Run], keys: list[str]) -> list[Row]:
    """One row per setting (the values of `keys`), best first by the mean best metric."""
    rows: dict[str, Row] = {}
    for run in runs:
        setting = {key: run.config.get(key) for key in keys}
        rows.setdefault(json.dumps(setting), Row([], setting)).runs.append(run)

    def rank(row: Row) -> tuple[bool, float]:
        best = row.values("best")
        mean = statistics.fmean(best) if best else 0.0
        return not best, -mean if MAXIMIZE else mean

    return sorted(rows.values(), key=rank)


def cell(values: list[float], digits: int = 4) -> str:
    """One value, or mean ± std over a row's runs."""
    if not values:
        return ""
    if len(values) == 1:
        return f"{values[0]:.{digits}g}"
    return f"{statistics.fmean(values):.{digits}g} ± {statistics.stdev(values):.2g}"


def table_csv(rows: list[Row], keys: list[str]) -> str:
    """Every value exact (repr); the std empty where a row has one run."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = [f"{c}_{s}" for c in NUMBERS for s in ("mean", "std")]
    writer.writerow(["runs", "status", *keys, "n", *columns])
    for row in rows:
        numbers: list[str] = []
        for column in NUMBERS:
            values = row.values(column)
            numbers.append(repr(statistics.fmean(values)) if values else "")
            numbers.append(repr(statistics.stdev(values)) if len(values) > 1 else "")
        names = " ".join(run.folder.name for run in row.runs)
        setting = [json.dumps(row.setting[key]) for key in keys]
        writer.writerow([names, row.status(), *setting, len(row.runs), *numbers])
    return out.getvalue()


def table_md(rows: list[Row], keys: list[str]) -> str:
    header = ["runs", "status", *(f"`{k}`" for k in keys), "n", f"best {METRIC}", f"final {METRIC}"]
    header += ["steps", "wall s", "samples/s"]
    better = "higher" if MAXIMIZE else "lower"
    lines = [
        f"# {METRIC} ({better} is better), best first",
        "",
        "Mean ± std over the runs of a row, which differ only in seed or fold (exact values: compare.csv).",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * (2 + len(keys)) + ["---:"] * (len(header) - 2 - len(keys))) + " |",
    ]
    for row in rows:
        cells = [" ".join(run.folder.name for run in row.runs), row.status()]
        cells += [json.dumps(row.setting[key]) for key in keys]
        cells += [str(len(row.runs)), cell(row.values("best")), cell(row.values("final"))]
        cells += [cell(row.values("steps"), 6), cell(row.values("wall_s"), 3)]
        cells.append(cell(row.values("samples_per_s"), 3))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_curves(rows: list[Row], keys: list[str], out: Path) -> None:
    """Every run's validation curve, overlaid, a colour per row (needs matplotlib, the `plot`
    extra); a run not finished is dashed. Beyond LEGEND rows the colours run from the best row
    (dark) to the worst (light), without a legend: the table names them."""
    from .plot import pyplot, save_png

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    many = len(rows) > LEGEND
    colours = plt.get_cmap("viridis" if many else "tab10")
    for i, row in enumerate(rows):
        colour = colours(i / (len(rows) - 1)) if many else colours(i)
        label = " ".join(f"{key}={json.dumps(row.setting[key])}" for key in keys) or row.runs[0].folder.name
        for run in row.runs:
            if run.curve:
                steps, values = zip(*run.curve, strict=True)
                style = "-" if run.status == "finished" else "--"
                ax.plot(steps, values, style, color=colour, marker="o", markersize=3, label=label)
                label = None  # one legend entry a row
    ax.set_xlabel("step")
    ax.set_ylabel(METRIC)
    if many:
        ax.set_title(f"{len(rows)} rows of compare.md, best (dark) to worst (light)")
    elif ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    fig.tight_layout()
    save_png(fig, out)


def compare(paths: list[Path], out_dir: Path) -> list[Row]:
    """Read the runs, print the table and write compare.csv, compare.md and compare.png."""
    runs = [read_run(folder) for folder in find_runs(paths)]
    keys = [key for key in differing_keys(runs) if key not in REPEATS]  # the table's columns
    rows = group(runs, keys)
    markdown = table_md(rows, keys)
    print(markdown, end="")
    out_dir.mkdir(parents=True, exist_ok=True)
    write_whole(out_dir / "compare.csv", table_csv(rows, keys).encode("utf-8"))
    write_whole(out_dir / "compare.md", markdown.encode("utf-8"))
    print(f"written: {out_dir / 'compare.md'}, compare.csv")
    if importlib.util.find_spec("matplotlib") is None:
        print('compare.png skipped: matplotlib is not installed (pip install -e ".[plot]")')
    else:
        write_curves(rows, keys, out_dir / "compare.png")
        print(f"written: {out_dir / 'compare.png'}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.compare",
        description="Compare runs: a table of what differs and how they did, and their validation curves.",
        epilog="exit codes: 0 done, 2 no run found",
    )
    parser.add_argument("paths", type=Path, nargs="+", help="run folders, a runs folder or a sweep folder")
    parser.add_argument("--out", type=Path, help="default: the folder given, else the first run's parent")
    args = parser.parse_args(argv)
    one_folder = len(args.paths) == 1 and not (args.paths[0] / "config.json").is_file()
    out = args.out or (args.paths[0] if one_folder else args.paths[0].parent)
    try:
        compare(args.paths, out)
    except CompareError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
