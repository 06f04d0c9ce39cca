"""The benchmarks in benchmarks/ still run: each at its tiny size, with finite figures.

No timing is asserted here (timings belong in benchmarks/RESULTS.md, not in a pass/fail test);
what is checked is that every benchmark completes and reports the rows and figures it promises.
"""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import common, run  # noqa: E402

pytestmark = pytest.mark.slow

# The figures each benchmark must report, whatever the machine
EXPECTED = {
    "overhead": ["generated_added_ms", "hand_written_ms"],
    "throughput": ["classification_ratio", "language_model_ratio"],
    "dataloading": ["data_bound_speedup", "data_bound_generated_wait", "compute_bound_speedup"],
    "generation": ["ratio", "copier_s", "cold_s"],
    "project_tests": ["classification_s", "language_model_s"],
    "gpu": ["fp32_tokens_per_s", "bf16_tokens_per_s", "bf16+compile_tokens_per_s"],
    "corpus": ["char_mb_s", "char_of_reference", "bpe_ratio", "startup_ratio", "rss_ratio"],
    "images": ["decode_speedup", "decode_generated_wait", "balanced_speedup"],
    "realimages": ["shapes_default", "shapes_baseline", "equal_time_ratio", "real_sets_won"],
    "finetune": ["hand_val_acc", "project_val_acc", "scratch_val_acc", "acc_gap", "time_ratio"],
    "runtools": [
        "compare_100_s",
        "builtin_suggested_lr",
        "builtin_default_acc",
        "builtin_suggested_acc",
    ],
    "gpt2_finetune": ["ratio", "transformers_tokens_per_s", "project_tokens_per_s"],
    "ema": ["cnn_ratio", "cnn_update_ms", "linear_ratio", "linear_update_ms"],
    "ckpt_save": ["sync_save_s", "async_save_s"],
    "sweeps": ["ratio", "best_tpe", "best_random"],
    "exports": ["onnx_latency_ratio", "int8_accuracy_drop"],  # --quick: the image model alone
    "lm_loop": ["ratio", "median_step_ratio", "hand_written_ms", "trainer_ms"],
    # --quick: two tables cut to 600 rows, one seed, two epochs, LightGBM with 10 trees
    "tables": ["rmse_ratio_max", "accuracy_gap_max", "linear_beaten"],
    "trackers": [
        f"{tracker}_{figure}"
        for tracker in ("wandb", "mlflow")
        for figure in ("ratio", "ratio_1", "log_ms", "start_s", "close_s")
    ],
}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scratch folder for the module, so projects are rendered once."""
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(autouse=True)
def private_caches(monkeypatch: pytest.MonkeyPatch, work: Path) -> None:
    """Template caches in the scratch folder, never the user's (restored after each test)."""
    monkeypatch.setenv("PTSCAFFOLD_CACHE_DIR", str(work / "cache" / "ptscaffold"))
    monkeypatch.setenv("COPIER_CACHE_DIR", str(work / "cache" / "copier"))
    monkeypatch.setattr(common, "quiet_budget_s", 0.0)  # never wait for a quiet machine here


def test_every_benchmark_is_checked():
    assert sorted(EXPECTED) == sorted(run.BENCHMARKS)


@pytest.mark.parametrize("name", run.BENCHMARKS)
def test_benchmark_runs_at_a_tiny_size(name: str, work: Path):
    section = importlib.import_module(f"benchmarks.{name}").run(work, quick=True)
    assert section.rows, "no rows"
    assert all(len(row) == len(section.columns) for row in section.rows)
    for figure in EXPECTED[name]:
        assert math.isfinite(section.figures[figure]), f"{figure} = {section.figures[figure]}"
    if name == "overhead" and common.has_module("lightning"):
        assert math.isfinite(section.figures["lightning_lean_added_ms"])
    assert f"## {section.title}" in common.results_markdown([section], quick=True, seconds=0.0)


def test_run_writes_the_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    asked = []
    monkeypatch.setattr(
        run, "run_all", lambda names, work, quick: asked.append((names, quick)) or []
    )
    out = tmp_path / "RESULTS.md"
    assert run.main(["--quick", "--only", "generation", "gpu", "--out", str(out)]) == 0
    assert asked == [(["generation", "gpu"], True)]
    assert out.read_text().startswith("# Benchmarks")
    assert "Machine: " in out.read_text()
