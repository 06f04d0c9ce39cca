"""Run the benchmarks and regenerate benchmarks/RESULTS.md.

    python benchmarks/run.py                      # everything, about 10 minutes on 2 cores
    python benchmarks/run.py --quick              # tiny sizes, about a minute: proves they run
    python benchmarks/run.py --only overhead generation
    python benchmarks/run.py --quick --out /tmp/RESULTS.md

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

BENCHMARKS = ["overhead", "throughput", "dataloading", "generation", "project_tests", "gpu"]


def run_all(names: list[str], work: Path, *, quick: bool) -> list[common.Section]:
    common.isolate_caches(work)
    common.quiet_budget_s = 0.0 if quick else 120.0  # --quick proves the benchmarks run; no waiting
    sections = []
    for name in names:
        start = time.perf_counter()
        section = importlib.import_module(f"benchmarks.{name}").run(work, quick)
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
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "RESULTS.md")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ptscaffold-bench-") as tmp:
        sections = run_all(args.only, Path(tmp), quick=args.quick)
    common.write_results(args.out, sections, quick=args.quick, seconds=time.perf_counter() - start)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
