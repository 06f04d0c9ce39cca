"""A sweep's results, from its study and its runs' folders: results.csv (exact values), results.md
(trials best first, the pruned and failed ones, the best as a `train` command) and results.png."""

from __future__ import annotations

import json
import shlex
import statistics
from pathlib import Path

import optuna
from optuna.trial import TrialState

from ..engine.record.tables import MISSING, Row, pyplot, save_png, write_table
from .spec import PACKAGE, Sweep, overrides, result, run_name, say, value_text


def write_results(study: optuna.Study, sweep: Sweep, sweep_dir: Path) -> None:
    trials = [t for t in study.get_trials() if not t.user_attrs.get("surplus")]
    rows, better = [], "higher" if sweep.maximize else "lower"
    for trial in (t for t in trials if t.state == TrialState.COMPLETE):
        runs = [sweep_dir / run_name(trial.number, repeat) for repeat in sweep.repeats]
        setting = {key: value_text(value) for key, value in trial.params.items()}
        metric = {sweep.metric: [result(run, sweep.metric) for run in runs]}
        rows.append(Row(setting, runs, metric, {"trial": str(trial.number)}))
    rows.sort(key=lambda row: (-1 if sweep.maximize else 1) * statistics.fmean(row.numbers[sweep.metric]))
    lines = [f"# Sweep {sweep.file.stem}: {sweep.metric}, {better} is better", ""]
    if rows:
        best = overrides({**sweep.fixed, **study.trials[int(rows[0].after["trial"])].params})
        command = shlex.join(["python", "-m", f"{PACKAGE}.train", *best])
        lines += ["The best trial's settings:", "", f"    {command}", ""]
    for trial in (t for t in trials if t.state in (TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)):
        records = [sweep_dir / run_name(trial.number, repeat) / "pruned.json" for repeat in sweep.repeats]
        why = [json.loads(r.read_text(encoding="utf-8"))["reason"] for r in records if r.is_file()]
        why += [trial.user_attrs.get("failed", "interrupted: rerun the sweep to continue")]
        params = " ".join(overrides(trial.params))
        lines.append(f"- trial {trial.number} {trial.state.name.lower()} ({params}): {why[0]}")
    note = "Each trial's mean ± std over its runs (seeds, folds), best first (exact values: results.csv)."
    header = ([*sweep.space], "runs", [sweep.metric], ["trial"])
    write_table(sweep_dir, "results", "\n".join([*lines, "", note]), rows, header)
    say(f"results: {sweep_dir / 'results.md'} ({len(rows)} of {len(trials)} trials finished)")
    plt = pyplot()
    if plt is None or not trials:
        say(f"results.png skipped: {MISSING if plt is None else 'no trial'}")
        return
    # The metric by trial (a pruned one's at its last evaluation), then against each searched key
    fig, axes = plt.subplots(1, 1 + len(sweep.space), figsize=(5 + 5 * len(sweep.space), 4), squeeze=False)
    for ax, key in zip(axes[0], [None, *sweep.space], strict=True):
        for state, marker in ((TrialState.COMPLETE, "o"), (TrialState.PRUNED, "x")):
            shown = [t for t in trials if t.state == state and t.value is not None]
            x = [t.number if key is None else t.params[key] for t in shown]
            ax.scatter(x, [t.value for t in shown], marker=marker, label=state.name.lower())
        ax.set_xscale("log" if getattr(sweep.space.get(key), "log", False) else "linear")
        ax.set(xlabel=key or "trial", ylabel=sweep.metric)
    axes[0][0].legend()
    save_png(fig, sweep_dir / "results.png")
