"""A sweep's results: what its members recorded, as a table ranking the points.

`results.csv` (exact values), `results.md` and, with matplotlib (the `plot` extra), `results.png`
in the sweep dir: one row per point, the mean and std over its seeds of the final and the best
metric (and the other final validation metrics), best first. The table is a function of the
sweep file and of what its members' folders hold, nothing else: a sweep interrupted and rerun
writes the same one, byte for byte.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..record.metrics import read_metrics
from ..runtime.files import write_whole
from .spec import Member, Sweep, SweepError, is_number, value_text


def run_dir(sweep_dir: Path, member: Member) -> Path:
    return sweep_dir / member.name


def is_finished(sweep_dir: Path, member: Member) -> bool:
    """A finished run has result.json (written last, and whole)."""
    return (run_dir(sweep_dir, member) / "result.json").is_file()


@dataclass
class Row:
    """One point of the sweep: its values, and each column's value for every finished seed."""

    order: int
    point: dict[str, Any]
    members: list[str]
    columns: dict[str, list[float]]


def collect(sweep: Sweep, sweep_dir: Path) -> list[Row]:
    """One row per point with a finished member, best first by the mean final metric."""
    rows: dict[int, Row] = {}
    for member in sweep.members:
        if not is_finished(sweep_dir, member):
            continue
        folder = run_dir(sweep_dir, member)
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        if not isinstance(result.get(sweep.metric), float):
            found = ", ".join(k for k, v in result.items() if isinstance(v, float))
            raise SweepError(f"metric {sweep.metric!r} is not in {folder / 'result.json'} (it has {found})")
        final = result[sweep.metric]
        series = [value for _, value in read_metrics(folder / "metrics.csv").get(sweep.metric, [])]
        best = (max if sweep.maximize else min)(series or [final])
        others = {
            k: v
            for k, v in result.items()
            if k != sweep.metric and k.startswith(("val_", "raw_val_")) and isinstance(v, float)
        }
        order = member.index // len(sweep.seeds)
        row = rows.setdefault(order, Row(order, member.point, [], {}))
        row.members.append(member.name)
        for column, value in {sweep.metric: final, f"best_{sweep.metric}": best, **others}.items():
            row.columns.setdefault(column, []).append(value)

    def rank(row: Row) -> tuple[bool, float, int]:
        mean = statistics.fmean(row.columns[sweep.metric])
        return math.isnan(mean), -mean if sweep.maximize else mean, row.order

    return sorted(rows.values(), key=rank)


def varying_keys(sweep: Sweep) -> list[str]:
    """The searched keys whose value differs between points: the table's first columns."""
    keys = sweep.points[0].keys()
    return [k for k in keys if len({json.dumps(p[k]) for p in sweep.points}) > 1]


def results_csv(rows: list[Row], keys: list[str]) -> str:
    """Every value exact (repr), the std empty where a point has one seed."""
    columns = list(dict.fromkeys(c for row in rows for c in row.columns))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*keys, "seeds", *(f"{c}_{s}" for c in columns for s in ("mean", "std")), "members"])
    for row in rows:
        cells: list[Any] = [*(value_text(row.point[k]) for k in keys), len(row.members)]
        for column in columns:
            values = row.columns.get(column, [])
            cells.append(repr(statistics.fmean(values)) if values else "")
            cells.append(repr(statistics.stdev(values)) if len(values) > 1 else "")
        writer.writerow([*cells, " ".join(row.members)])
    return out.getvalue()


def results_md(sweep: Sweep, rows: list[Row], keys: list[str]) -> str:
    columns = list(dict.fromkeys(c for row in rows for c in row.columns))
    better = "higher" if sweep.maximize else "lower"
    header = [*(f"`{k}`" for k in keys), "seeds", *(c.replace("_", " ") for c in columns), "members"]
    lines = [
        f"# Sweep {sweep.file.stem}: {sweep.metric}, {better} is better",
        "",
        "Mean ± std over the seeds of each point, best first (exact values: results.csv).",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(keys) + ["---:"] * (len(header) - len(keys) - 1) + ["---"]) + " |",
    ]
    for row in rows:
        cells = [*(value_text(row.point[k]) for k in keys), str(len(row.members))]
        for column in columns:
            values = row.columns.get(column, [])
            if not values:
                cells.append("")
            elif len(values) == 1:
                cells.append(f"{values[0]:.4g}")
            else:
                cells.append(f"{statistics.fmean(values):.4g} ± {statistics.stdev(values):.2g}")
        cells.append(" ".join(row.members))
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def why_no_plot(rows: list[Row], keys: list[str]) -> str | None:
    if importlib.util.find_spec("matplotlib") is None:
        return 'matplotlib is not installed (pip install -e ".[plot]")'
    if not rows:
        return "no member has finished"
    return None if keys else "no key varies between the points"


def results_png(sweep: Sweep, rows: list[Row], keys: list[str]) -> bytes:
    """The metric against each varying key (a panel each), error bars over seeds."""
    import matplotlib  # optional: the `plot` extra

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda row: row.order)
    means = [statistics.fmean(row.columns[sweep.metric]) for row in rows]
    spreads = [statistics.stdev(row.columns[sweep.metric]) if len(row.members) > 1 else 0.0 for row in rows]
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 4), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        values = [row.point[key] for row in rows]
        labels = list(dict.fromkeys(value_text(v) for v in values))
        if all(map(is_number, values)):
            x = values
            if min(values) > 0 and max(values) / min(values) >= 10:
                ax.set_xscale("log")  # learning rates, weight decays
            if len(labels) <= 8:  # a grid: a tick at each value
                ax.set_xticks(sorted(set(values)), [value_text(v) for v in sorted(set(values))])
                ax.minorticks_off()
        else:
            x = [labels.index(value_text(v)) for v in values]
            ax.set_xticks(range(len(labels)), labels)
        ax.errorbar(x, means, yerr=spreads, fmt="o", capsize=3)
        ax.set_xlabel(key)
        ax.set_ylabel(sweep.metric)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out.getvalue()


def write_tables(sweep: Sweep, sweep_dir: Path, rows: list[Row], keys: list[str]) -> None:
    """results.csv and results.md in the sweep dir."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_whole(sweep_dir / "results.csv", results_csv(rows, keys).encode("utf-8"))
    write_whole(sweep_dir / "results.md", results_md(sweep, rows, keys).encode("utf-8"))


def write_plot(sweep: Sweep, sweep_dir: Path, rows: list[Row], keys: list[str]) -> None:
    """results.png in the sweep dir (needs matplotlib: see why_no_plot)."""
    write_whole(sweep_dir / "results.png", results_png(sweep, rows, keys))
