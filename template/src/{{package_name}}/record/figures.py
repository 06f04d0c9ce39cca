"""PNG figures, drawn with matplotlib when it is installed (the `plot` extra): the commands that
draw (plot, compare, lr_find, the sweep) share these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..runtime.files import writing

MISSING = 'matplotlib is not installed (pip install -e ".[plot]")'


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
