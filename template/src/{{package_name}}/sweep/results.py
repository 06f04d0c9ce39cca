"""A sweep's table: per point, the mean and std over its seeds of the final and best metric (and
the other final validation metrics), best first. Made of the sweep file and the members' folders
only: a sweep interrupted and rerun writes the same one, byte for byte."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from ..compare import Row, write_table
from ..record.figures import MISSING, pyplot, save_png
from ..record.metrics import read_metrics
from .spec import Member, Sweep, SweepError, is_number, value_text


def is_finished(sweep_dir: Path, member: Member) -> bool:  # result.json is written last, whole
    return (sweep_dir / member.name / "result.json").is_file()


def collect(sweep: Sweep, sweep_dir: Path, keys: list[str]) -> list[Row]:
    """One row per point with a finished member, best first by the mean final metric."""
    rows: dict[int, Row] = {}
    for member in sweep.members:
        folder = sweep_dir / member.name
        if not is_finished(sweep_dir, member):
            continue
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        floats = {k: v for k, v in result.items() if isinstance(v, float)}
        if sweep.metric not in floats:
            found = ", ".join(floats)
            raise SweepError(f"metric {sweep.metric!r} is not in {folder / 'result.json'} (it has {found})")
        final = floats[sweep.metric]
        series = [value for _, value in read_metrics(folder / "metrics.csv").get(sweep.metric, [])]
        others = {k: v for k, v in floats.items() if k.startswith(("val_", "raw_val_"))}
        setting = {key: value_text(member.point[key]) for key in keys}
        row = rows.setdefault(member.index // len(sweep.seeds), Row(setting, [], {}, {}))
        row.runs.append(member)
        row.after["members"] = " ".join(m.name for m in row.runs)
        best = (max if sweep.maximize else min)(series or [final])
        for column, value in {sweep.metric: final, f"best_{sweep.metric}": best, **others}.items():
            row.numbers.setdefault(column, []).append(value)

    def rank(row: Row) -> tuple[bool, float, int]:
        mean = statistics.fmean(row.numbers[sweep.metric])
        return math.isnan(mean), -mean if sweep.maximize else mean, row.runs[0].index

    return sorted(rows.values(), key=rank)


def write_results(sweep: Sweep, sweep_dir: Path) -> None:
    """results.csv (exact values), results.md and, with matplotlib, results.png in the sweep dir."""
    # The table's first columns: the searched keys whose value differs between points
    keys = [k for k in sweep.points[0] if len({json.dumps(p[k]) for p in sweep.points}) > 1]
    rows = collect(sweep, sweep_dir, keys)
    better = "higher" if sweep.maximize else "lower"
    heading = (
        f"# Sweep {sweep.file.stem}: {sweep.metric}, {better} is better\n\n"
        "Mean ± std over the seeds of each point, best first (exact values: results.csv)."
    )
    columns = list(dict.fromkeys(c for row in rows for c in row.numbers))
    write_table(sweep_dir, "results", heading, rows, (keys, "seeds", columns, ["members"]))
    print(f"results: {sweep_dir / 'results.md'} ({len(rows)} point{'s' * (len(rows) != 1)})", flush=True)
    plt = pyplot()
    skipped = MISSING if plt is None else "no member has finished" if not rows else None
    skipped = skipped or (None if keys else "no key varies between the points")
    if skipped:
        print(f"results.png skipped: {skipped}", flush=True)
        return
    # The metric against each varying key (a panel each), error bars over seeds, in the sweep's order
    rows = sorted(rows, key=lambda row: row.runs[0].index)
    means = [statistics.fmean(row.numbers[sweep.metric]) for row in rows]
    spreads = [statistics.stdev(row.numbers[sweep.metric]) if len(row.runs) > 1 else 0.0 for row in rows]
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 4), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        values = [row.runs[0].point[key] for row in rows]
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
    save_png(fig, sweep_dir / "results.png")
