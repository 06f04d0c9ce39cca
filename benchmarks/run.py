"""Run the benchmarks and regenerate benchmarks/RESULTS.md.

    python benchmarks/run.py                # all of them, about 10 minutes on 2 cores + 8 (tables)
    python benchmarks/run.py --quick        # tiny sizes, about a minute: prints, writes no file
    python benchmarks/run.py --only overhead generation

Lightning rows need `pip install -e '.[bench]'`; without Lightning they are left out.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
BENCHMARKS = [
    "overhead",
    "throughput",
    "dataloading",
    "generation",
    "project_tests",
    "gpu",
    "ema",
    "ckpt_save",
    "corpus",
    "images",
    "trackers",
    "realimages",
    "finetune",
    "runtools",
    "gpt2_finetune",
    "sweeps",
    "exports",
    "lm_loop",
    "tables",
]


def run_all(names: list[str], work: Path, *, quick: bool) -> list[common.Section]:
    common.isolate_caches(work)
    common.quiet_budget_s = 0.0 if quick else 120.0  # --quick proves the benchmarks run; no waiting
    sections = []
    for name in names:
        start = time.perf_counter()
        section = importlib.import_module(f"benchmarks.{name}").run(work, quick)
        if quick:
            section.met = None  # tiny sizes say nothing about the targets
        print(
            f"{section.title}: {common.verdict(section.met)} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        sections.append(section)
    return sections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes: checks that each benchmark runs"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=BENCHMARKS,
        default=BENCHMARKS,
        metavar="NAME",
        help=f"run these only ({', '.join(BENCHMARKS)})",
    )
    parser.add_argument(
        "--out", type=Path, help="where to write (default: RESULTS.md; --quick prints instead)"
    )
    args = parser.parse_args(argv)
    out = args.out or (None if args.quick else RESULTS)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ptscaffold-bench-") as tmp:
        sections = run_all(args.only, Path(tmp), quick=args.quick)
    text = common.results_markdown(sections, quick=args.quick, seconds=time.perf_counter() - start)
    if out is None:
        print(text)
    else:
        out.write_text(text)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
