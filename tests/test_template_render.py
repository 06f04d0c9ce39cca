"""Every combination renders: each combination of the template's flags, read from copier.yml.

All combinations (every choice of every flag, every bool both ways, `slurm` only where its
`when` holds) are rendered once, in worker processes, by `ptscaffold.new`. Their files are then
checked by content: identical files across combinations are checked once.

- every combination renders, and no rendered file holds Jinja residue;
- every Python file byte-compiles, and passes `ruff check` and `ruff format --check` under the
  generated project's own [tool.ruff] (one config for all combinations, which is checked), for
  each `python_version` (it only changes ruff's target-version, which is checked too);
- what a flag renders appears exactly when the flag is on (FOOTPRINTS).

Ruff runs once over a tree of "layers": layer k holds, at its path in a project layout, the k-th
distinct content of each Python file that has k of them (an empty file at the paths of the others,
as ruff's isort tells a first-party module by its file), beside the rendered pyproject.toml. Each
file is therefore linted where it lives in a real project (first-party imports resolve the same),
under that project's config, and each distinct content once.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import template_matrix as tm
import yaml
from filelock import FileLock
from jinja2 import meta
from jinja2.sandbox import SandboxedEnvironment

FLAGS = tm.flag_names()
COMBINATIONS = tm.combinations(FLAGS)
PYTHON_VERSIONS = tm.questions()["python_version"].values
PKG = tm.PACKAGE

# Processes rendering the combinations (override with PTSCAFFOLD_RENDER_PROCESSES).
PROCESSES = int(os.environ.get("PTSCAFFOLD_RENDER_PROCESSES") or min(os.cpu_count() or 1, 8))


@dataclass
class Matrix:
    """Every rendered combination, by content."""

    combos: list[dict[str, Any]]
    manifests: list[dict[str, str]]  # per combination: {path: sha256}
    errors: dict[int, str]  # combination index -> why it did not render
    contents: dict[str, bytes]  # sha256 -> content
    # python_version -> manifest of the default answers with that python_version
    metadata: dict[str, dict[str, str]]
    seconds: float
    cpu_seconds: float  # in the render processes
    processes: int
    _where: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def combos_with(self, path: str, sha: str) -> list[int]:
        """Indices of the combinations whose `path` has content `sha`."""
        if not self._where:
            for i, manifest in enumerate(self.manifests):
                for p, s in manifest.items():
                    self._where.setdefault((p, s), []).append(i)
        return self._where.get((path, sha), [])

    def text(self, sha: str) -> str | None:
        try:
            return self.contents[sha].decode("utf-8")
        except UnicodeDecodeError:
            return None

    def distinct(self, suffix: str = "") -> dict[tuple[str, str], None]:
        """Every distinct (path, sha256) whose path ends with `suffix`, in first-seen order."""
        seen: dict[tuple[str, str], None] = {}
        for manifest in self.manifests:
            for path, sha in manifest.items():
                if path.endswith(suffix):
                    seen.setdefault((path, sha), None)
        return seen

    def example(self, path: str, sha: str) -> str:
        """The first combination holding this file, and how many do."""
        where = self.combos_with(path, sha)
        return f"{json.dumps(self.combos[where[0]])} (and {len(where) - 1} more)"


def _render_matrix(store: Path, template: Path) -> None:
    metadata_combos = [
        tm.default_answers(tm.all_names(), python_version=v) for v in PYTHON_VERSIONS
    ]
    start = time.perf_counter()
    manifests, contents, cpu = tm.render_many(
        COMBINATIONS + metadata_combos, template, store / "work", PROCESSES
    )
    seconds = time.perf_counter() - start
    (store / "contents").mkdir()
    for sha, content in contents.items():
        (store / "contents" / sha).write_bytes(content)
    index = {
        "combos": COMBINATIONS,
        "manifests": manifests[: len(COMBINATIONS)],
        "metadata": dict(zip(PYTHON_VERSIONS, manifests[len(COMBINATIONS) :], strict=True)),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "processes": PROCESSES,
    }
    shutil.rmtree(store / "work", ignore_errors=True)
    (store / "index.json").write_text(json.dumps(index))


@pytest.fixture(scope="module")
def matrix(session_root: Path, template_snapshot: Path) -> Matrix:
    """Render every combination once per test run (xdist workers share it)."""
    store = session_root / "matrix"
    with FileLock(f"{store}.lock"):
        if not (store / "index.json").is_file():
            shutil.rmtree(store, ignore_errors=True)
            store.mkdir()
            _render_matrix(store, template_snapshot)
    index = json.loads((store / "index.json").read_text())
    contents = {p.name: p.read_bytes() for p in (store / "contents").iterdir()}
    manifests, errors = [], {}
    for i, manifest in enumerate(index["manifests"]):
        if isinstance(manifest, str):
            errors[i] = manifest
            manifest = {}
        manifests.append(manifest)
    for version, manifest in index["metadata"].items():
        assert not isinstance(manifest, str), f"python_version={version}: {manifest}"
    return Matrix(
        index["combos"],
        manifests,
        errors,
        contents,
        index["metadata"],
        index["seconds"],
        index["cpu_seconds"],
        index["processes"],
    )


def _fail(title: str, problems: list[str], limit: int = 25) -> None:
    shown = "\n\n".join(problems[:limit])
    more = f"\n\n... and {len(problems) - limit} more" if len(problems) > limit else ""
    pytest.fail(f"{title} ({len(problems)}):\n\n{shown}{more}", pytrace=False)


# --- rendering ---------------------------------------------------------------------------------


def test_the_combinations_come_from_copier_yml():
    """The product of every flag's answers, less the `when`-hidden ones: each flag is varied."""
    questions = tm.questions()
    assert "task" in FLAGS and "python_version" not in FLAGS
    for name in FLAGS:
        seen = {combo[name] for combo in COMBINATIONS if name in combo}
        assert seen == set(questions[name].values), name
    assert len({tm.key(c) for c in COMBINATIONS}) == len(COMBINATIONS)
    # slurm is asked only with a distributed strategy
    assert all(("slurm" in c) == (c["distributed"] != "none") for c in COMBINATIONS)


def test_every_combination_renders(matrix: Matrix, record_property: Callable[..., None]):
    record_property(
        tm.TIMING,
        f"rendered {len(matrix.combos) + len(matrix.metadata)} projects in "
        f"{matrix.seconds:.1f} s with {matrix.processes} processes "
        f"({matrix.cpu_seconds:.0f} CPU seconds in them)",
    )
    assert len(matrix.combos) == len(COMBINATIONS)
    problems = [f"{json.dumps(matrix.combos[i])}\n  {error}" for i, error in matrix.errors.items()]
    if problems:
        _fail("combinations that do not render", problems)


def test_fast_renders_equal_plain_renders(
    matrix: Matrix, render_project: Callable[[dict[str, Any]], Path]
):
    """The render processes' speed-ups (see template_matrix._init_worker) change no file."""
    for answers in tm.task_defaults(FLAGS):
        manifest = matrix.manifests[COMBINATIONS.index(answers)]
        project = render_project(answers)
        plain = {
            path: tm.digest(content)
            for path, content in tm.read_tree(project).items()
            if "__pycache__" not in path
        }
        assert plain == manifest, answers


def test_no_jinja_residue(matrix: Matrix):
    problems = []
    for path, sha in matrix.distinct():
        text = matrix.text(sha)
        if text is None:
            continue
        if found := tm.jinja_residue(path, text):
            problems.append("\n".join(found[:5]) + f"\n  in {matrix.example(path, sha)}")
    if problems:
        _fail("rendered files with Jinja residue", problems)


def test_python_byte_compiles(matrix: Matrix):
    problems = []
    for path, sha in matrix.distinct(".py"):
        try:
            compile(matrix.contents[sha], path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            problems.append(f"{path}:{exc.lineno}: {exc.msg}\n  in {matrix.example(path, sha)}")
    if problems:
        _fail("rendered Python that does not compile", problems)


def unsafe_loads(source: bytes) -> list[int]:
    """Lines of `torch.load(...)` calls that do not pass `weights_only=True`."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) == "torch.load"
        and not any(
            k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        )
    ]


def test_unsafe_loads_are_found():
    assert unsafe_loads(b"torch.load(p)\ntorch.load(p, weights_only=False)\n") == [1, 2]
    assert unsafe_loads(b"torch.load(p, map_location='cpu', weights_only=True)\n") == []


def test_every_torch_load_refuses_pickled_code(matrix: Matrix):
    """The project's rule, in its tests as in its package: `torch.load` with `weights_only=True`
    (tensors and plain containers), never code from a pickle."""
    problems = [
        f"{path}:{line}: torch.load without weights_only=True\n  in {matrix.example(path, sha)}"
        for path, sha in matrix.distinct(".py")
        for line in unsafe_loads(matrix.contents[sha])
    ]
    if problems:
        _fail("rendered torch.load calls that may unpickle code", problems)


def test_answers_that_are_not_flags_render_no_python(matrix: Matrix, template_snapshot: Path):
    """The questions left out of the rendered combinations (tm.NOT_FLAGS) change no Python file.

    No template file rendering Python mentions them (in its name or its text), and the default
    project with each python_version differs from the default one in no Python file (the other
    not-flags are checked the same way in test_answers).
    """
    template = template_snapshot / "template"
    config = yaml.safe_load((template_snapshot / "copier.yml").read_text())
    env = SandboxedEnvironment(
        extensions=["jinja2_ansible_filters.AnsibleCoreFiltersExtension"],
        **config.get("_envops", {}),
    )
    for source in template.rglob("*"):
        if not source.is_file():
            continue
        relative = source.relative_to(template).as_posix()
        used = meta.find_undeclared_variables(env.parse(relative))
        if source.suffix == ".jinja":
            used |= meta.find_undeclared_variables(env.parse(source.read_text()))
        if used & set(tm.NOT_FLAGS):
            assert not relative.removesuffix(".jinja").endswith(".py"), (relative, used)
    default = matrix.manifests[COMBINATIONS.index(tm.default_answers(FLAGS))]
    for version, manifest in matrix.metadata.items():
        changed = {p for p in set(manifest) | set(default) if manifest.get(p) != default.get(p)}
        assert not {p for p in changed if p.endswith(".py")}, version


# --- ruff --------------------------------------------------------------------------------------


def _ruff_table(matrix: Matrix, sha: str) -> dict[str, Any]:
    return tomllib.loads(matrix.contents[sha].decode())["tool"]["ruff"]


def test_every_combination_has_the_same_ruff_config(matrix: Matrix):
    """What lets one config lint the files of every combination."""
    default_sha = matrix.metadata[PYTHON_VERSIONS[0]]["pyproject.toml"]
    default = _ruff_table(matrix, default_sha)
    assert default.get("line-length") == 110
    problems = [
        f"[tool.ruff] differs: {_ruff_table(matrix, sha)}\n  in {matrix.example(path, sha)}"
        for path, sha in matrix.distinct("pyproject.toml")
        if path == "pyproject.toml" and _ruff_table(matrix, sha) != default
    ]
    if problems:
        _fail("combinations with another ruff config", problems)
    for version in PYTHON_VERSIONS:
        table = _ruff_table(matrix, matrix.metadata[version]["pyproject.toml"])
        assert table == {**default, "target-version": f"py{version.replace('.', '')}"}, version


@dataclass
class LintTree:
    root: Path
    files: dict[str, tuple[str, str]]  # path under root -> (project path, sha256)
    canaries: dict[str, str]  # path under root -> the ruff codes it must get ("" for none)


# Files beside the rendered ones that show each layer gets the project's config: its line
# length (110, not ruff's 88 or this repository's 100), its isort rules, and `demo` (under src/)
# as first-party, as in a real project.
LONG_CALL = "print(" + ", ".join(['"x"'] * 20) + ")"  # 105 characters: one line at 110
LONG_COMMENT = "# " + "word " * 23  # 116 characters once stripped
CANARIES = {
    "tests/zz_canary_first_party.py": (
        "import torch\n\nfrom demo import model\n\nprint(torch, model)\n",
        "",
    ),
    "tests/zz_canary_one_block.py": (
        "import torch\nfrom demo import model\n\nprint(torch, model)\n",
        "I001",
    ),
    f"src/{PKG}/zz_canary_lines.py": (f"{LONG_CALL}\n{LONG_COMMENT.rstrip()}\n", "E501"),
}


@pytest.fixture(scope="module")
def lint_tree(matrix: Matrix, tmp_path_factory: pytest.TempPathFactory) -> LintTree:
    """Layers of the distinct Python files, each layer a project layout (see the docstring)."""
    variants: dict[str, list[str]] = {}
    for path, sha in matrix.distinct(".py"):
        variants.setdefault(path, []).append(sha)
    root = tmp_path_factory.mktemp("lint")
    files = {}
    layers = max(len(v) for v in variants.values())
    for layer in range(layers):
        base = root / f"layer-{layer:04d}"
        for path, shas in variants.items():
            target = base / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if layer < len(shas):
                target.write_bytes(matrix.contents[shas[layer]])
                files[target.relative_to(root).as_posix()] = (path, shas[layer])
            else:  # ruff's isort finds a first-party module by its file: an empty one will do
                target.touch()
    canaries = {}
    for path, (text, codes) in CANARIES.items():
        target = root / f"layer-{layers - 1:04d}" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        canaries[target.relative_to(root).as_posix()] = codes
    return LintTree(root, files, canaries)


def _with_pyproject(root: Path, matrix: Matrix, version: str) -> None:
    """Give every layer the pyproject.toml rendered with `version`."""
    pyproject = matrix.contents[matrix.metadata[version]["pyproject.toml"]]
    for layer in root.iterdir():
        (layer / "pyproject.toml").write_bytes(pyproject)


def _ruff(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tm.ruff(), *args, "--no-cache", "."],
        cwd=root,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("version", PYTHON_VERSIONS, ids=lambda v: f"python{v}")
def test_ruff_check(
    version: str, lint_tree: LintTree, matrix: Matrix, record_property: Callable[..., None]
):
    _with_pyproject(lint_tree.root, matrix, version)
    start = time.perf_counter()
    proc = _ruff(lint_tree.root, "check", "--output-format=json")
    record_property(
        tm.TIMING,
        f"ruff check of {len(lint_tree.files)} files: {time.perf_counter() - start:.1f} s",
    )
    assert proc.returncode in (0, 1), proc.stderr
    problems, canaries = [], dict.fromkeys(lint_tree.canaries, "")
    for d in json.loads(proc.stdout):
        relative = Path(d["filename"]).resolve().relative_to(lint_tree.root.resolve()).as_posix()
        if relative in canaries:
            canaries[relative] = " ".join(sorted({*canaries[relative].split(), d["code"]}))
            continue
        path, sha = lint_tree.files[relative]
        problems.append(
            f"{path}:{d['location']['row']}:{d['location']['column']}: {d['code']} {d['message']}"
            f"\n  in {matrix.example(path, sha)}"
        )
    assert canaries == lint_tree.canaries, "the lint tree does not lint like a project"
    if problems:
        _fail(f"ruff check (python_version={version})", sorted(set(problems)))


@pytest.mark.parametrize("version", PYTHON_VERSIONS, ids=lambda v: f"python{v}")
def test_ruff_format(version: str, lint_tree: LintTree, matrix: Matrix, tmp_path: Path):
    """`ruff format` changes no file (run on a copy; comparing contents works with any ruff)."""
    work = tmp_path / "tree"
    shutil.copytree(lint_tree.root, work)
    _with_pyproject(work, matrix, version)
    proc = _ruff(work, "format")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for relative in lint_tree.canaries:
        assert (work / relative).read_bytes() == (lint_tree.root / relative).read_bytes(), (
            "the lint tree does not format like a project"
        )
    problems = []
    for relative, (path, sha) in lint_tree.files.items():
        formatted = (work / relative).read_bytes()
        if formatted != matrix.contents[sha]:
            diff = difflib.unified_diff(
                matrix.contents[sha].decode().splitlines(),
                formatted.decode().splitlines(),
                path,
                "ruff format",
                lineterm="",
            )
            problems.append(f"{path}\n  in {matrix.example(path, sha)}\n" + "\n".join(diff))
    if problems:
        _fail(f"ruff format would reformat (python_version={version})", sorted(set(problems)))


# --- what each flag renders ----------------------------------------------------------------------


# Text marks look at code and configuration, not at prose: the README may well name a feature
# that is off (its table of answers does), and .copier-answers.yml names every question.
CODE = r"^(?!.*\.md$)(?!\.copier-answers\.yml$)"


@dataclass(frozen=True)
class Mark:
    """A regex over project paths (`in_path`), or over the contents of the files whose path
    matches `files`."""

    pattern: str
    in_path: bool = False
    files: str = CODE

    def __str__(self) -> str:
        if self.in_path:
            return f"a file matching {self.pattern!r}"
        return f"text matching {self.pattern!r} in files matching {self.files!r}"


@dataclass(frozen=True)
class Footprint:
    """What a feature renders: every mark is in each combination where `on`, none elsewhere."""

    name: str
    on: Callable[[dict[str, Any]], bool]
    marks: tuple[Mark, ...]


FOOTPRINTS = (
    Footprint(
        "straight_through_quant",
        lambda a: a["straight_through_quant"],
        (
            Mark(rf"^src/{PKG}/runtime/quant\.py$", in_path=True),
            Mark(r"^tests/test_quant\.py$", in_path=True),
        ),
    ),
    Footprint(
        "distributed",
        lambda a: a["distributed"] != "none",
        (
            # Every project has runtime/distributed.py; only these join a process group
            Mark(r"init_process_group", files=rf"^src/{PKG}/runtime/distributed\.py$"),
            Mark(r"(^|/)launch\.sh$", in_path=True),
        ),
    ),
    Footprint("slurm", lambda a: a.get("slurm", False), (Mark(r"#SBATCH"),)),
    # Every project has runtime/precision.py and calls its autocast(); only amp's reach torch's
    Footprint("amp", lambda a: a["amp"] != "none", (Mark(r"torch\.autocast"),)),
    # copier.yml: "fp16 adds a GradScaler; bf16 needs none"
    Footprint("amp=fp16", lambda a: a["amp"] == "fp16", (Mark(r"GradScaler"),)),
    # A test may check that weights are finite; the guard itself lives in the package.
    Footprint(
        "nan_guard",
        lambda a: a["nan_guard"],
        (Mark(r"torch\.isfinite", files=r"^src/"), Mark(r"max_skips")),
    ),
    Footprint("compile", lambda a: a["compile"], (Mark(r"\.compile\(mode="),)),
    # timm is imported, required and tested only where it is chosen
    Footprint(
        "timm",
        lambda a: a.get("timm", False),
        (
            Mark(rf"^src/{PKG}/backbones\.py$", in_path=True),
            Mark(r"^tests/test_backbones\.py$", in_path=True),
            Mark(r"\bimport timm\b|\bfrom timm\b"),
            Mark(r'"timm>=', files=r"^pyproject\.toml$"),
        ),
    ),
    Footprint(
        "activation_checkpointing",
        lambda a: a["activation_checkpointing"],
        (Mark(r"(?<![_.])\bcheckpoint\("),),  # not save_checkpoint( or torch.utils's
    ),
    # What needs the tensorboard package (torch.profiler's tensorboard_trace_handler does not).
    Footprint(
        "logger=tensorboard",
        lambda a: a["logger"] == "tensorboard",
        (Mark(r"SummaryWriter"), Mark(r'"tensorboard\b', files=r"^pyproject\.toml$")),
    ),
    # A tracker's library is imported, required and tested only where it is chosen
    Footprint(
        "logger=wandb",
        lambda a: a["logger"] == "wandb",
        (Mark(r"^import wandb$", files=r"^src/"), Mark(r'"wandb>=', files=r"^pyproject\.toml$")),
    ),
    Footprint(
        "logger=mlflow",
        lambda a: a["logger"] == "mlflow",
        (
            Mark(r"^from mlflow\b", files=r"^src/"),
            Mark(r'"mlflow-skinny>=', files=r"^pyproject\.toml$"),
        ),
    ),
    Footprint(
        "tracker",
        lambda a: a["logger"] in ("wandb", "mlflow"),
        (
            Mark(rf"^src/{PKG}/engine/record/tracker\.py$", in_path=True),
            Mark(r"^tests/test_tracker\.py$", in_path=True),
            Mark(r"\btracker=", files=r"^tests/"),
        ),
    ),
)


def _first_line(pattern: str, text: str) -> str | None:
    for number, line in enumerate(text.splitlines(), 1):
        if re.search(pattern, line):
            return f"line {number}: {line.strip()}"
    return None


def _finder(matrix: Matrix, mark: Mark) -> Callable[[int], str | None]:
    """where(i): where `mark` is in combination i (a path, or a path and line), or None."""
    if mark.in_path:
        return lambda i: next((p for p in matrix.manifests[i] if re.search(mark.pattern, p)), None)
    hits: dict[tuple[str, str], str] = {}
    for path, sha in matrix.distinct():
        text = matrix.text(sha)
        found = _first_line(mark.pattern, text) if text and re.search(mark.files, path) else None
        if found:
            hits[path, sha] = f"{path} {found}"
    return lambda i: next(
        (hits[p, s] for p, s in matrix.manifests[i].items() if (p, s) in hits), None
    )


def test_each_flag_renders_its_code_and_nothing_when_off(matrix: Matrix):
    problems = []
    rendered = [i for i in range(len(matrix.combos)) if i not in matrix.errors]
    for fp in FOOTPRINTS:
        for mark in fp.marks:
            where = _finder(matrix, mark)
            missing, leftover = [], []
            for i in rendered:
                found = where(i)
                if fp.on(matrix.combos[i]) and found is None:
                    missing.append(i)
                elif not fp.on(matrix.combos[i]) and found is not None:
                    leftover.append((i, found))
            if missing:
                problems.append(
                    f"{fp.name} on, but no {mark} in {len(missing)} combinations, "
                    f"e.g. {json.dumps(matrix.combos[missing[0]])}"
                )
            if leftover:
                i, found = leftover[0]
                problems.append(
                    f"{fp.name} off, but {mark} in {len(leftover)} combinations, e.g. {found}"
                    f"\n  in {json.dumps(matrix.combos[i])}"
                )
    if problems:
        _fail("flags whose code is missing when on or left behind when off", problems)


# --- the shape of the generated code (what a maintainer reads) -----------------------------------

TRAIN_JINJA = tm.REPO_ROOT / "template" / "src" / "{{package_name}}" / "engine" / "loop.py.jinja"
TRAIN_PY = f"src/{PKG}/engine/loop.py"
# Distinct training loops (engine/loop.py) over the flag matrix, per task: the tasks' loops differ
# where each starts from its own pretrained weights (a GPT-2 folder, a timm backbone) and where
# classification runs k-fold cross-validation, so a project holds at most 12 variants' worth
MAX_TRAIN_RENDERS_PER_TASK = 12
MAX_TRAIN_CONDITIONALS = 14  # `{% if %}` in engine/loop.py.jinja
MAX_FUNCTION_LINES = 100  # any function of any loop's render
JINJA_TAG = re.compile(r"\{\{|\{%|\{#")


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_the_loop_is_one_short_script_in_few_variants(
    matrix: Matrix, record_property: Callable[..., None]
):
    """Few distinct engine/loop.py files, each of short functions without closures."""
    renders = [sha for path, sha in matrix.distinct(".py") if path == TRAIN_PY]
    first_combo = (matrix.combos[matrix.combos_with(TRAIN_PY, sha)[0]] for sha in renders)
    per_task = Counter(combo["task"] for combo in first_combo)
    conditionals = len(re.findall(r"\{%-?\s*if\b", TRAIN_JINJA.read_text()))
    longest, problems = 0, []
    for sha in renders:
        tree = ast.parse(matrix.contents[sha])
        for function in _functions(tree):
            lines = function.end_lineno - function.lineno + 1
            longest = max(longest, lines)
            if lines > MAX_FUNCTION_LINES:
                problems.append(
                    f"{function.name}() is {lines} lines in {matrix.example(TRAIN_PY, sha)}"
                )
            nested = [f.name for f in _functions(function) if f is not function]
            if nested:
                problems.append(
                    f"{function.name}() defines {nested} in {matrix.example(TRAIN_PY, sha)}"
                )
    record_property(
        tm.TIMING,
        f"engine/loop.py: {dict(per_task)} distinct renders per task, {conditionals} "
        f"{{% if %}} in the template, longest function {longest} lines",
    )
    assert max(per_task.values()) <= MAX_TRAIN_RENDERS_PER_TASK, per_task
    assert conditionals <= MAX_TRAIN_CONDITIONALS
    if problems:
        _fail("loop functions that are too long or nest functions", problems)


# --- the layout: a project's own files at the package's top, the machinery in engine/ ------------

MAX_TOP_MODULES = 15  # modules beside __init__.py at the top of the package, in any render
RECORDER = f"src/{PKG}/engine/record/"
MAX_RECORDER_IMPORTS = 5  # the package's modules outside engine/record/ that the recorder imports


def test_the_package_top_holds_at_most_15_modules_in_every_render(matrix: Matrix):
    """Commands and the files a user edits stand at the top; the machinery is in engine/."""
    top = re.compile(rf"src/{PKG}/(\w+)\.py")
    counts = [
        sorted(m[1] for m in map(top.fullmatch, manifest) if m and m[1] != "__init__")
        for manifest in matrix.manifests
    ]
    most = max(range(len(counts)), key=lambda i: len(counts[i]))
    assert len(counts[most]) <= MAX_TOP_MODULES, (matrix.combos[most], counts[most])


def imported_modules(path: str, source: str) -> set[str]:
    """The absolute names of the modules a file of the rendered package imports from it."""
    package = path.removeprefix("src/").removesuffix(".py").split("/")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            found.add(".".join([*base, *([node.module] if node.module else [])]))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = (
                [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            )
            found |= {name for name in names if name and name.split(".")[0] == PKG}
    return found


def test_the_recorder_imports_few_of_the_package_in_every_render(matrix: Matrix):
    """The recorder is handed what it records: of the package's modules outside engine/record/,
    it imports at most MAX_RECORDER_IMPORTS, in any render."""
    inside = f"{PKG}.engine.record"
    per_file = {
        (path, sha): imported_modules(path, matrix.text(sha) or "")
        for path, sha in matrix.distinct(".py")
        if path.startswith(RECORDER)
    }
    worst: set[str] = set()
    for manifest in matrix.manifests:
        outside = {
            module
            for (path, sha), modules in per_file.items()
            if manifest.get(path) == sha
            for module in modules
            if module != inside and not module.startswith(inside + ".")
        }
        worst = max(worst, outside, key=len)
    assert len(worst) <= MAX_RECORDER_IMPORTS, sorted(worst)


TEMPLATE_PACKAGE = tm.REPO_ROOT / "template" / "src" / "{{package_name}}"
# `{% if` in the contents of every file under template/src (names excluded: a file chosen by
# its name is how a variant stays whole). The recorder, train.py and config.py keep 30: fields
# and calls of one feature each, a few lines apiece
MAX_TEMPLATE_CONDITIONALS = 120
# Control lines in any template that renders a Python file: beyond this, a variant is its own file
MAX_CONTROL_SHARE = 0.20
CONDITIONAL = re.compile(r"\{%-?\s*if\b")


def control_share(text: str) -> float:
    """The larger of two measures of a template's Jinja statements: lines that start with one,
    among the non-blank lines, and lines that hold one anywhere, among all lines."""
    lines = text.splitlines()
    nonblank = [line for line in lines if line.strip()]
    starting = sum(line.strip().startswith("{%") for line in nonblank) / max(len(nonblank), 1)
    anywhere = sum("{%" in line for line in lines) / max(len(lines), 1)
    return max(starting, anywhere)


def test_control_share_counts_statement_lines():
    assert control_share("x = 1\n\n{% if a %}\ny = 2\n{% endif %}\n") == 0.5
    assert control_share("x = 1  {% if a %}# a{% endif %}\ny = 2\n") == 0.5


def test_the_template_reads_as_python(record_property: Callable[..., None]):
    """Few `{% if %}` over the package's templates, and none of them mostly Jinja."""
    files = {
        path.relative_to(TEMPLATE_PACKAGE).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(TEMPLATE_PACKAGE.rglob("*"))
        if path.is_file()
    }
    conditionals = sum(len(CONDITIONAL.findall(text)) for text in files.values())
    python = {name: text for name, text in files.items() if _renders(name).endswith(".py")}
    shares = {name: control_share(text) for name, text in python.items()}
    over = {name: f"{share:.1%}" for name, share in shares.items() if share > MAX_CONTROL_SHARE}
    worst = max(shares, key=shares.__getitem__)
    record_property(
        tm.TIMING,
        f"{conditionals} {{% if %}} in template/src; "
        f"most control lines: {shares[worst]:.1%} in {worst}",
    )
    assert conditionals <= MAX_TEMPLATE_CONDITIONALS
    assert over == {}


def _renders(name: str) -> str:
    """The path a template file renders to: its name without conditions and `.jinja`."""
    return re.sub(r"\{%.*?%\}", "", name).removesuffix(".jinja")


def test_every_jinja_file_needs_jinja():
    """A template file without a Jinja tag is plain (it is then linted in place, see below)."""
    template = tm.REPO_ROOT / "template"
    needless = [
        str(path.relative_to(template))
        for path in template.rglob("*.jinja")
        if not JINJA_TAG.search(path.read_text(encoding="utf-8"))
    ]
    assert needless == []


def _plain_python(template: Path) -> list[Path]:
    """Template files copied verbatim that become Python files (their names may be conditions)."""
    return sorted(
        path
        for path in (template / "template").rglob("*")
        if path.is_file()
        and path.suffix != ".jinja"
        and re.sub(r"\{%.*?%\}", "", path.name).endswith(".py")
    )


def test_plain_template_files_lint_in_place(
    matrix: Matrix, template_snapshot: Path, tmp_path: Path
):
    """Plain files pass ruff where they are, under the generated project's ruff config."""
    files = _plain_python(template_snapshot)
    assert len(files) >= 10, [f.name for f in files]
    config = tmp_path / "ruff.toml"
    table = _ruff_table(matrix, matrix.metadata[PYTHON_VERSIONS[0]]["pyproject.toml"])
    config.write_text(_toml(table))
    for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):
        proc = subprocess.run(
            [*tm.ruff(), *command, "--config", str(config), *map(str, files)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def _toml(table: dict[str, Any], prefix: str = "") -> str:
    """A [tool.ruff] table as a ruff.toml (its keys without the `tool.ruff` prefix)."""
    lines, sections = [], []
    for key, value in table.items():
        if isinstance(value, dict):
            sections.append(_toml(value, f"{prefix}{key}."))
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    header = f"[{prefix.rstrip('.')}]\n" if prefix else ""
    return header + "\n".join(lines) + "\n\n" + "".join(sections)
