"""A covering set of combinations runs its generated test suite.

The set is computed from copier.yml, not written down: a greedy pairwise covering array over the
feature flags (any two answers of any two flags appear together in at least one project; `slurm`
only where its `when` holds), seeded with each task's default answers, and chosen for the
least suite time (`tm.suite_cost`: torchrun and torch.compile make a suite dearer), not the
fewest rows. python_version stays at its default: it changes only pyproject.toml
(test_template_render checks that).

Each project is rendered once per run (`render_project`) and its own suite runs in a subprocess
of this interpreter (`run_generated_tests`); the suites are marked `slow` and run in CI.

Release check, off by default: `--all-combinations` runs the generated suite of every
combination of the flags (1920 today, about 40 s each: hours even with `-n auto`):

    python -m pytest tests/test_template_projects.py --all-combinations -n auto
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import template_matrix as tm

FLAGS = tm.flag_names()
DEFAULTS = tm.task_defaults(FLAGS)


COVERING = tm.covering_array(FLAGS, seeds=DEFAULTS, cost=tm.suite_cost)

# Projects in the covering set at most. Each runs its generated suite: 35-50 s for the
# defaults, minutes with compile=true (on 2 CPU cores); see the timings in the terminal summary.
MAX_COVERING = 12
# Their summed tm.suite_cost at most: 44 when the fewest rows were sought (eight of them with
# torchrun, four with torch.compile), 42 now (seven and four)
MAX_COVERING_COST = 42


def _covered(rows: list[dict[str, Any]]) -> set[tm.Pair]:
    return set().union(*(tm.pairs(row, FLAGS) for row in rows))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "every_combination" in metafunc.fixturenames:
        if metafunc.config.getoption("--all-combinations"):
            combos = tm.combinations(FLAGS)
            metafunc.parametrize("every_combination", combos, ids=tm.label)
        else:
            skip = pytest.mark.skip(reason="release check: pass --all-combinations")
            metafunc.parametrize("every_combination", [pytest.param(None, marks=skip, id="off")])


# --- the covering set itself ---------------------------------------------------------------------


def test_covering_set_holds_every_pair_of_answers():
    missing = tm.required_pairs(FLAGS) - _covered(COVERING)
    assert not missing, sorted(missing, key=str)[:10]
    # ...and the check can fail: without its last row the set misses a pair
    assert tm.required_pairs(FLAGS) - _covered(COVERING[:-1])


def test_covering_set_is_valid_small_and_starts_from_the_defaults():
    valid = {tm.key(c) for c in tm.combinations(FLAGS)}
    assert all(tm.key(row) in valid for row in COVERING)
    assert len({tm.key(row) for row in COVERING}) == len(COVERING)
    assert COVERING[: len(DEFAULTS)] == DEFAULTS
    assert len(COVERING) <= MAX_COVERING, [tm.label(row) for row in COVERING]
    assert sum(map(tm.suite_cost, COVERING)) <= MAX_COVERING_COST
    assert {row["distributed"] for row in COVERING} == set(tm.questions()["distributed"].values)
    assert {row["task"] for row in COVERING} == set(tm.questions()["task"].values)
    # logger pairs with task alone (tm.NARROW), yet each tracker must meet a process group
    distributed = {row["logger"] for row in COVERING if row["distributed"] != "none"}
    assert {"wandb", "mlflow"} <= distributed, distributed


def test_required_pairs_honour_when():
    """slurm pairs with ddp and fsdp, never with distributed=none."""
    required = tm.required_pairs(FLAGS)
    assert (("distributed", "ddp"), ("slurm", True)) in required
    assert (("distributed", "fsdp"), ("slurm", False)) in required
    assert not any(("distributed", "none") in pair and pair[1][0] == "slurm" for pair in required)


# --- generated suites ----------------------------------------------------------------------------


def _assert_suite_passes(
    answers: dict[str, Any],
    render_project: Callable[[dict[str, Any]], Path],
    run_generated_tests: Callable[..., subprocess.CompletedProcess[str]],
    record_property: Callable[..., None],
) -> None:
    project = render_project(answers)
    proc = run_generated_tests(project)
    record_property(tm.TIMING, f"generated suite {proc.elapsed:.0f} s")
    assert proc.returncode == 0, (
        f"the generated suite failed for {json.dumps(answers)}\n"
        f"project: {project}\n\n{tm.tail(proc.stdout)}"
    )


# Beyond the default rows, the covering set's projects also vary what is not a feature flag:
# the name (up to the longest package name the validators allow), the license and the CI's
# operating systems (ci itself is on, its default), so every one of these reaches a generated
# suite.
NAMES = ["My Image Classifier Experiments", "An extremely long project name for tests", "ok"]


def with_metadata(index: int, answers: dict[str, Any]) -> dict[str, Any]:
    if index < len(DEFAULTS):
        return answers
    extra = index - len(DEFAULTS)
    licenses = tm.questions()["license"].values
    varied = {
        **answers,
        "project_name": NAMES[extra % len(NAMES)],
        "license": licenses[extra % len(licenses)],
    }
    varied["ci_os"] = tm.questions()["ci_os"].values[extra % 2]
    return varied


def test_the_longest_name_is_the_longest_package_name_allowed():
    assert len(NAMES[1].lower().replace(" ", "_")) == 40


# The covering set as its suites run it: names, licenses and CI systems filled in
COVERED = [with_metadata(i, row) for i, row in enumerate(COVERING)]


@pytest.mark.slow
@pytest.mark.parametrize("answers", COVERED, ids=tm.label)
def test_covering_set_passes_its_generated_tests(
    answers, render_project, run_generated_tests, record_property
):
    _assert_suite_passes(answers, render_project, run_generated_tests, record_property)


@pytest.mark.slow
def test_every_combination_passes_its_generated_tests(
    every_combination, render_project, run_generated_tests, record_property
):
    _assert_suite_passes(every_combination, render_project, run_generated_tests, record_property)


# --- each task with the default answers ----------------------------------------------------------


@pytest.mark.parametrize("answers", DEFAULTS, ids=lambda a: a["task"])
def test_default_project_has_no_jinja_residue_and_compiles(answers, render_project):
    project = render_project(answers)
    residue = []
    for path, content in tm.read_tree(project).items():
        if "__pycache__" in path:
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text
        residue += tm.jinja_residue(path, text)
        if path.endswith(".py"):
            compile(text, str(project / path), "exec", dont_inherit=True)
    assert not residue, "\n".join(residue)


@pytest.mark.parametrize("answers", DEFAULTS, ids=lambda a: a["task"])
@pytest.mark.parametrize("command", [("check",), ("format", "--check")], ids=" ".join)
def test_default_project_passes_ruff(answers, command, render_project):
    """With the project's own pyproject.toml, as its developer runs it."""
    project = render_project(answers)
    proc = subprocess.run(
        [*tm.ruff(), *command, "--no-cache", "."],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("answers", DEFAULTS, ids=lambda a: a["task"])
def test_default_project_passes_its_generated_tests(
    answers, render_project, run_generated_tests, record_property
):
    # The covering set starts from these answers: the suite runs once for both tests.
    _assert_suite_passes(answers, render_project, run_generated_tests, record_property)


@pytest.mark.slow
def test_a_generated_suite_runs_its_own_package_over_another_of_the_same_name(render_project):
    """Both tasks' default projects are called `demo`, as two projects of a user's can be. With
    the classifier importable (as `pip install -e` of it makes it), the language model's tests
    run the language model, in the processes they start as well as in pytest's own."""
    by_task = {answers["task"]: render_project(answers) for answers in DEFAULTS}
    classifier, language_model = by_task["classification"], by_task["language_model"]
    assert classifier.name == language_model.name
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(classifier / "src")
    proc = tm.run_suite(language_model, ["tests/test_resume.py", "-k", "sigterm"], env, 300)
    assert proc.returncode == 0, tm.tail(proc.stdout)


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    command = [str(script), "--no-cache", "--no-logo"]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)


# A planted import and the contract it breaks: the machinery importing a command, and the
# recorder importing the data it should be handed
PLANTED = [
    ("metrics.py", "from ... import train", "every import points down: commands, machinery"),
    ("recorder.py", "from ...data import loading", "the recorder is handed what it records"),
]


@pytest.mark.parametrize("answers", DEFAULTS, ids=lambda a: a["task"])
def test_import_layers_hold_and_break_when_the_machinery_imports_upwards(
    answers, render_project, tmp_path
):
    """The generated import-linter contracts pass as rendered (every render's own test_style runs
    them too), and each fails when a module of the recorder imports what it must not."""
    project = render_project(answers)
    assert _lint_imports(project).returncode == 0
    for name, planted, contract in PLANTED:
        edited = tmp_path / name
        shutil.copytree(project, edited, ignore=shutil.ignore_patterns("__pycache__"))
        module = edited / "src" / tm.PACKAGE / "engine" / "record" / name
        module.write_text(module.read_text(encoding="utf-8") + f"\n{planted}  # noqa: E402\n")
        broken = _lint_imports(edited)
        assert broken.returncode != 0
        verdicts = [line for line in broken.stdout.splitlines() if line.startswith(contract)]
        assert verdicts and verdicts[0].endswith("BROKEN"), broken.stdout


# Models of one's own in place of each task's example, as a user writes them in model.py: a
# `build_model(cfg.model, data_info)` that returns any nn.Module mapping a batch of inputs to the
# task's outputs, and nothing else of the example
YOUR_MODELS = {
    "classification": '''"""A multilayer perceptron on the flattened input."""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import ModelConfig
from .data_info import ImageInfo


class MLP(nn.Module):
    def __init__(self, in_features: int, hidden: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(in_features, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, *input shape)
        return self.layers(x)  # (B, num_classes)


def build_model(cfg: ModelConfig, info: ImageInfo) -> nn.Module:
    return MLP(math.prod(info.input_shape), 64, info.num_classes, cfg.dropout)
''',
    "language_model": '''"""A bigram model: the next token's logits from the current token alone."""

from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig
from .data_info import TextInfo


class Bigram(nn.Module):
    def __init__(self, vocab_size: int, dropout: float) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:  # idx: (B, T)
        return self.dropout(self.table(idx))  # (B, T, vocab_size)


def build_model(cfg: ModelConfig, info: TextInfo) -> nn.Module:
    return Bigram(info.vocab_size, cfg.dropout)
''',
}
# What tests the example model itself, which the swap replaces: its own tests, and for the
# language model the loading of GPT-2 weights into its layout
EXAMPLE_MODEL_TESTS = {
    "classification": ["tests/test_model.py"],
    "language_model": ["tests/test_model.py", "tests/test_pretrained.py"],
}


@pytest.mark.slow
@pytest.mark.parametrize("answers", DEFAULTS, ids=lambda a: a["task"])
def test_a_model_of_your_own_leaves_every_other_test_file_passing(
    answers, render_project, tmp_path
):
    """model.py replaced, nothing else edited: the machinery's tests (resume, accumulation, FLOPs,
    export, EMA, sweeps ...) build whatever build_model returns, and pass."""
    project = tmp_path / "project"
    shutil.copytree(render_project(answers), project, ignore=shutil.ignore_patterns("__pycache__"))
    model = YOUR_MODELS[answers["task"]]
    (project / "src" / tm.PACKAGE / "model.py").write_text(model, encoding="utf-8")
    skipped = [f"--ignore={path}" for path in EXAMPLE_MODEL_TESTS[answers["task"]]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = tm.run_suite(project, ["-x", *skipped], env, 900)
    assert proc.returncode == 0, tm.tail(proc.stdout)
    assert " passed" in proc.stdout.splitlines()[-1], tm.tail(proc.stdout)


@pytest.mark.slow
def test_sweep_workers_run_each_grid_point_once_in_processes_of_their_own(render_project, tmp_path):
    """`--workers 2` starts two worker processes of one study (each a new interpreter, which the
    generated suite leaves to this test to keep itself quick): every grid point runs once, and
    each worker runs a trial. This process holds trial 0's lock, as a worker running it would,
    until another trial has finished: the worker that asked for trial 0 waits, the other runs."""
    import fcntl

    import optuna

    project = render_project(DEFAULTS[0])
    sweep_file = tmp_path / "grid.toml"
    sweep_file.write_text(
        '[fixed]\nepochs = 1\nmax_steps = 2\ndevice = "cpu"\n'
        "[grid]\noptim.lr = [1e-3, 2e-3, 3e-3]\n",
        encoding="utf-8",
    )
    swept = tmp_path / "sweep"
    swept.mkdir()
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    command = [sys.executable, "-m", f"{tm.PACKAGE}.sweep", str(sweep_file), "--workers", "2"]
    with (swept / "trial-000.lock").open("a") as running:
        fcntl.flock(running, fcntl.LOCK_EX)
        sweep = subprocess.Popen(
            [*command, "--dir", str(swept)],
            cwd=project,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        while not any(swept.glob("trial-*/result.json")) and sweep.poll() is None:
            time.sleep(0.05)
    output, _ = sweep.communicate(timeout=600)
    assert sweep.returncode == 0, tm.tail(output)
    storage = f"sqlite:///{swept / 'study.db'}"
    trials = optuna.load_study(study_name="grid", storage=storage).trials
    assert sorted(t.params["optim.lr"] for t in trials) == [1e-3, 2e-3, 3e-3], "each point once"
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert len({t.user_attrs["worker"] for t in trials}) == 2, "one worker ran every trial"
