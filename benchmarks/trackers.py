"""11. What an experiment tracker costs per step: `tracker=true` vs `tracker=false`.

A project rendered with `logger=wandb` and one with `logger=mlflow` each run the generated
`train` end to end on the default classification model (the small CNN), in one thread, with the
same data; within a project the contenders differ in `tracker` only, at the default
`log_interval=10` and at `log_interval=1`, the worst case. The loop sends the tracker one call
per logged step, so the cost per step is that call's divided by `log_interval`: the runs with
the tracker on also time each of the tracker's own calls (start, `log`, `close`) as the loop
makes them, which gives that cost without two whole runs' noise.

Nothing leaves the machine: W&B runs offline, MLflow writes its default SQLite store in the run
directory, and both are told to send no telemetry or error reports (see `private_env`).
"""

from __future__ import annotations

import functools
import importlib
import math
import operator
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.overhead import write_images

BATCH = 16
TRACKERS = ["wandb", "mlflow"]
INTERVALS = [10, 1]  # the default, and the worst case: a tracker call every step
CONTENDERS = [f"{state}-{interval}" for interval in INTERVALS for state in ("off", "on")]
# Unset in each measuring process: the user's own settings must neither redirect the runs nor
# let them reach a server
UNSET = [
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_NAME",
    "WANDB_PROJECT",
    "WANDB_ENTITY",
    "WANDB_BASE_URL",
    "WANDB_API_KEY",
    "WANDB_DIR",
]


def run(work: Path, quick: bool) -> common.Section:
    warmup, window, repeats = (2, 10, 1) if quick else (10, 150, 3)
    steps = common.StepClock(warmup, window).steps_needed
    images = work / f"images-{steps}.npz"
    # One epoch holds the whole window: the epoch's end (validation, checkpoint) is not per-step
    write_images(images, n=math.ceil(steps * BATCH / 0.9) + BATCH)
    results = {}
    for tracker in TRACKERS:
        project, package = common.render(
            work, "classification", name=f"bench_{tracker}", logger=tracker
        )
        spec = dict(work=str(work), project=str(project), package=package, images=str(images))
        spec |= dict(warmup=warmup, window=window)
        results[tracker] = common.compare("trackers", spec, CONTENDERS, repeats)
    rows, figures = [], {}
    for tracker in TRACKERS:
        for interval in INTERVALS:
            row, found = summarise(results[tracker], interval)
            rows.append([tracker, str(interval), *row])
            suffix = "" if interval == 10 else f"_{interval}"
            figures |= {f"{tracker}_{name}{suffix}": value for name, value in found.items()}
        figures |= tracker_calls(results[tracker], tracker)
    return common.Section(
        title="11. Experiment trackers per step",
        target="report the per-step cost of each tracker",
        columns=["Tracker", "log_interval", "off ms/step", "on ms/step", "added ms/step",
                 "ratio", "ratio, middle half", "CPU ratio", "log() ms",
                 "ratio from log() alone", "start s", "close s"],
        rows=rows,
        figures=figures,
        notes=notes(results, figures, warmup, window, repeats),
    )  # fmt: skip


def summarise(runs: dict[str, list[dict[str, Any]]], interval: int) -> tuple[list[str], dict]:
    """One table row (after tracker and interval) and its figures, for one `log_interval`."""
    off, on = f"off-{interval}", f"on-{interval}"
    ratio = common.paired(runs, "ms_per_step", on, off, operator.truediv)
    added = common.paired(runs, "ms_per_step", on, off, operator.sub)
    cpu_ratio = common.paired(runs, "cpu_ms_per_step", on, off, operator.truediv)
    off_ms = common.median(runs[off], "ms_per_step")
    log_ms = common.median(runs[on], "log_ms")
    # What the calls alone add to a step, the loop's other work taken as equal
    from_log = (off_ms + log_ms / interval) / off_ms
    row = [
        common.fmt(off_ms, 2), common.fmt(common.median(runs[on], "ms_per_step"), 2),
        f"{statistics.median(added):+.3f}", common.fmt(statistics.median(ratio), 3),
        common.middle_half(ratio), common.fmt(statistics.median(cpu_ratio), 3),
        common.fmt(log_ms, 3), common.fmt(from_log, 4),
        common.fmt(common.median(runs[on], "start_s"), 2),
        common.fmt(common.median(runs[on], "close_s"), 3),
    ]  # fmt: skip
    found = {"ratio": statistics.median(ratio), "added_ms": statistics.median(added)}
    return row, found | {"ratio_from_log": from_log}


def tracker_calls(runs: dict[str, list[dict[str, Any]]], tracker: str) -> dict[str, float]:
    """The tracker's own calls, over every run that had it on (both intervals)."""
    on = [run for contender, each in runs.items() if contender.startswith("on-") for run in each]
    keys = ["log_ms", "log_ms_cpu", "start_s", "start_s_cpu", "close_s", "import_s", "held_s"]
    keys += ["startup_s", "metrics_per_log"]
    found = {f"{tracker}_{key}": common.median(on, key) for key in keys}
    off = [run for contender, each in runs.items() if contender.startswith("off-") for run in each]
    found[f"{tracker}_added_startup_s"] = found[f"{tracker}_startup_s"] - common.median(
        off, "startup_s"
    )
    return found


def notes(
    results: dict[str, dict[str, list[dict[str, Any]]]],
    figures: dict[str, float],
    warmup: int,
    window: int,
    repeats: int,
) -> list[str]:
    def each(key: str, digits: int = 2) -> str:
        return ", ".join(f"{t} {common.fmt(figures[f'{t}_{key}'], digits)}" for t in TRACKERS)

    every_run = {f"{t}-{c}": runs for t in TRACKERS for c, runs in results[t].items()}
    return [
        f"{window} steps timed per run after {warmup} warm-up steps, batch {BATCH}, the default "
        f"CNN, one torch thread, {repeats} interleaved run(s) per contender; ratio = on / off "
        "of the same round (wall time: the trackers work in threads and processes of their "
        "own, which the training thread's CPU ratio leaves out), median over rounds. Start-up, "
        "validation and the last checkpoint fall outside the window.",
        "log() ms: the median of every `Tracker.log` call the loop made (a step's dict holds "
        f"{each('metrics_per_log', 0)} metrics), timed as the training thread pays it (W&B "
        "hands the record to its service process, which writes it later; MLflow writes it to "
        "SQLite before returning); of which the training thread's CPU time, ms: "
        f"{each('log_ms_cpu', 3)}. Ratio from log() alone = (off step + log() / log_interval) "
        "/ off step: the cost with the noise of two whole runs taken out.",
        f"start s: `Tracker(...)` in the run, the first in its process (W&B starts its service "
        f"process; MLflow creates the SQLite store), of which CPU s: {each('start_s_cpu')}; "
        "close s: `close()` at the run's end. Also "
        f"paid at start: importing the library, s: {each('import_s')}; `held()`, s: "
        f"{each('held_s', 3)}. Start-up from `main()` to the first step, on - off, s: "
        f"{each('added_startup_s')}.",
        "W&B with WANDB_MODE=offline, MLflow at its default store (MLFLOW_TRACKING_URI unset); "
        "MLflow's telemetry and W&B's error reports off, so nothing leaves the machine.",
        common.load_note(every_run),
    ]


# ---- worker -------------------------------------------------------------------------------


def private_env(work: Path) -> None:
    """Keep both trackers local and out of the user's files: W&B offline with its config and
    caches under `work`, MLflow at its default store, neither sending telemetry or errors."""
    for name in UNSET:
        os.environ.pop(name, None)
    os.environ.update(
        WANDB_MODE="offline",
        WANDB_ERROR_REPORTING="false",
        WANDB_CONFIG_DIR=str(work / "wandb-config"),
        WANDB_CACHE_DIR=str(work / "wandb-cache"),
        WANDB_DATA_DIR=str(work / "wandb-data"),
        MLFLOW_DISABLE_TELEMETRY="true",
        DO_NOT_TRACK="true",
    )


class StartClock(common.StepClock):
    """A step clock that also notes when the first step begins, so start-up is timed too."""

    first = math.nan

    def tick(self) -> None:
        if self.calls == 0:
            self.first = time.perf_counter()
        super().tick()


def measure(spec: dict[str, Any]) -> dict[str, float]:
    private_env(Path(spec["work"]))  # the measuring process's only: the worker keeps its own
    project = common.import_project(spec)
    clock = StartClock(spec["warmup"], spec["window"])
    state, interval = spec["contender"].split("-")
    calls = timed_tracker(spec["package"]) if state == "on" else {}
    args = [
        *common.timed_run_args(spec, clock, BATCH),
        f"log_interval={interval}",
        f"tracker={'true' if state == 'on' else 'false'}",
    ]
    started = time.perf_counter()
    common.run_generated(project, args, clock)
    counts = calls.pop("metrics_per_log", [])
    return {
        "ms_per_step": clock.seconds_per_step() * 1e3,
        "cpu_ms_per_step": clock.cpu_seconds_per_step() * 1e3,
        "startup_s": clock.first - started,
        **{key: statistics.median(values) for key, values in calls.items()},
        # The per-step dict, the one sent every log_interval steps (an epoch's summary is smaller)
        **({"metrics_per_log": max(counts)} if counts else {}),
    }


def timed_tracker(package: str) -> dict[str, list[float]]:
    """Import the project's tracker module (timed) and time each of its `Tracker`'s calls from
    now on; the lists fill as the loop runs. Importing it first changes nothing: the loop
    imports it at start-up anyway, outside the timed window."""
    started = time.perf_counter()
    module = importlib.import_module(f"{package}.engine.record.tracker")
    calls = {"import_s": [time.perf_counter() - started], "metrics_per_log": []}
    for method, key, scale in [
        ("__init__", "start_s", 1.0),
        ("held", "held_s", 1.0),
        ("log", "log_ms", 1e3),
        ("close", "close_s", 1.0),
    ]:
        calls[key], calls[f"{key}_cpu"] = [], []
        timed = _timed(getattr(module.Tracker, method), calls[key], calls[f"{key}_cpu"], scale)
        setattr(module.Tracker, method, timed)
    log = module.Tracker.log

    def counted_log(self: Any, metrics: dict[str, float], step: int) -> None:
        calls["metrics_per_log"].append(len(metrics))
        log(self, metrics, step)

    module.Tracker.log = counted_log
    return calls


def _timed(
    method: Callable[..., Any], wall: list[float], cpu: list[float], scale: float
) -> Callable[..., Any]:
    """`method`, noting each call's wall time and the calling thread's CPU time (the difference
    is waiting: for the disk, another process, or the CPU)."""

    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started, cpu_started = time.perf_counter(), time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            wall.append((time.perf_counter() - started) * scale)
            cpu.append((time.thread_time() - cpu_started) * scale)

    return timed


if __name__ == "__main__":
    common.worker_main(measure)
