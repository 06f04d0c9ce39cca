"""What the commands share for their tables and figures (compare's, the sweep's, lr_find's):
a table as CSV (exact values) and Markdown (mean ± std), and PNGs written whole."""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...runtime.files import write_whole, writing

MISSING = 'matplotlib is not installed (pip install -e ".[plot]")'
DIGITS = {"steps": 6, "wall_s": 3, "samples_per_s": 3}  # significant digits in Markdown; else 4


Header = tuple[list[str], str, list[str], list[str]]  # keys, runs' count, numbers, cells after them


@dataclass
class Row:  # a line of a table (this one's, or a sweep's): the runs of one setting
    setting: dict[str, str]  # the differing keys' values, as text
    runs: list[Any]
    numbers: dict[str, list[float]]  # each column's values, one per run that has it
    after: dict[str, str]  # the last cells: the runs' names, their status


def write_table(out_dir: Path, stem: str, heading: str, rows: list[Row], header: Header) -> str:
    """`<stem>.csv` (exact values) and `<stem>.md` (mean ± std) in `out_dir`; returns the Markdown."""
    keys, count, columns, after = header
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([*keys, count, *(f"{c}_{s}" for c in columns for s in ("mean", "std")), *after])
    header = [*(f"`{k}`" for k in keys), count, *(c.replace("_", " ") for c in columns), *after]
    align = ["---"] * len(keys) + ["---:"] * (1 + len(columns)) + ["---"] * len(after)
    lines = [heading, "", "| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for row in rows:
        exact, shown = [], []
        for column in columns:
            values = row.numbers.get(column, [])
            mean = statistics.fmean(values) if values else None
            std = statistics.stdev(values) if len(values) > 1 else None
            exact += ["" if mean is None else repr(mean), "" if std is None else repr(std)]
            spread = "" if std is None else f" ± {std:.2g}"
            shown.append("" if mean is None else f"{mean:.{DIGITS.get(column, 4)}g}{spread}")
        setting = [row.setting[k] for k in keys]
        writer.writerow([*setting, len(row.runs), *exact, *row.after.values()])
        cells = [*setting, str(len(row.runs)), *shown, *row.after.values()]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = "\n".join(lines) + "\n"
    write_whole(out_dir / f"{stem}.csv", text.getvalue().encode("utf-8"))
    write_whole(out_dir / f"{stem}.md", markdown.encode("utf-8"))
    return markdown


def pyplot() -> Any:
    """matplotlib's pyplot drawing to files, or None without matplotlib (an optional extra)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, out: Path) -> None:
    """Lay `fig` out and write it to `out` whole (a reader never sees half a PNG), then free it."""
    fig.tight_layout()
    with writing(out) as f:
        fig.savefig(f, format="png", dpi=100)
    pyplot().close(fig)
