"""The template's feature questions, read from copier.yml, and the combinations of their answers.

Shared by conftest.py, test_template_render.py and test_template_projects.py (imported, not a
conftest). Nothing here knows a question by name but `task` and `NOT_FLAGS`: choices, defaults
and each question's `when` come from copier.yml, so a new flag or choice is tested without
editing this.

    questions()            every question with choices or a bool type, in copier.yml order
    flag_names()           those that are feature flags (the product the render test covers)
    combinations(names)    every valid combination of answers to `names` (honours `when`)
    covering_array(names)  a small set of combinations holding every pair of answers
    render_many(...)       render many combinations quickly, in worker processes
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ptscaffold._questions import QuestionInfo, Questionnaire

REPO_ROOT = Path(__file__).resolve().parents[1]
COPIER_YML = REPO_ROOT / "copier.yml"

# Choice questions that are not feature flags: none renders Python code, so multiplying the
# product by their answers would multiply the render test's time for no new Python file
# (test_template_render checks that they render none). python_version only sets
# `requires-python` and ruff's `target-version`; license renders LICENSE and project metadata;
# ci and ci_os render the CI workflow (test_answers checks each of these).
NOT_FLAGS = ("python_version", "license", "ci", "ci_os")

# The folder each project is rendered into; project_name defaults to it, and package_name to
# project_name, so every project's package is `demo`.
PROJECT_FOLDER = "demo"
PACKAGE = "demo"

# Tests record timings under this user property; the terminal summary (conftest) lists them.
TIMING = "ptscaffold_timing"

Answers = dict[str, Any]


@functools.cache
def questionnaire(root: Path = REPO_ROOT) -> Questionnaire:
    """The template's questions, read by ptscaffold's one reader (copier's own objects)."""
    return Questionnaire(root, root / PROJECT_FOLDER)


def questions(path: Path = COPIER_YML) -> dict[str, QuestionInfo]:
    """Every question with a finite set of answers (choices, or a bool), in copier.yml order.

    Settings (`_*`), computed values (`when: false`) and free-text questions are left out.
    Each has `name`, `values` (every valid answer, in copier.yml order) and `default`.
    """
    return {n: q for n, q in questionnaire(path.parent).asked.items() if q.values}


def flag_names() -> list[str]:
    return [name for name in questions() if name not in NOT_FLAGS]


def all_names() -> list[str]:
    return list(questions())


def applies(question: QuestionInfo, answers: Mapping[str, Any]) -> bool:
    """Whether copier asks `question` given the earlier answers."""
    return questionnaire().applies(question.name, answers)


def combinations(names: Sequence[str]) -> list[Answers]:
    """Every valid combination of answers to `names`, in copier.yml order.

    A question whose `when` is false given the earlier answers is left out of the combination
    (copier would not ask it, and ptscaffold refuses an answer to it).
    """
    qs = [q for q in questions().values() if q.name in names]
    combos: list[Answers] = [{}]
    for q in qs:
        grown: list[Answers] = []
        for combo in combos:
            if applies(q, combo):
                grown += [{**combo, q.name: value} for value in q.values]
            else:
                grown.append(combo)
        combos = grown
    return combos


def default_answers(names: Sequence[str], **overrides: Any) -> Answers:
    """The defaults of `names` (with `overrides`), leaving out questions that do not apply."""
    answers: Answers = {}
    for q in questions().values():
        if q.name not in names:
            continue
        value = overrides.get(q.name, q.default)
        if applies(q, answers):
            answers[q.name] = value
    return answers


def task_defaults(names: Sequence[str]) -> list[Answers]:
    """Default answers for each task."""
    return [default_answers(names, task=task) for task in questions()["task"].values]


def key(answers: Mapping[str, Any]) -> str:
    """A stable text key for a combination (the answers, sorted)."""
    return json.dumps(sorted(answers.items()), separators=(",", ":"))


def label(answers: Mapping[str, Any]) -> str:
    """A short test id: text answers as they are, a true flag by its name, false ones omitted."""
    parts = []
    for name, value in answers.items():
        if value is True:
            parts.append(name)
        elif value is not False:
            parts.append(str(value))
    return "-".join(parts)


# --- pairwise coverage ------------------------------------------------------------------------

Pair = tuple[tuple[str, Any], tuple[str, Any]]


# Flags whose code meets few others: their answers need only be paired with these. logger's
# backends sit behind one two-method interface that only the recorder calls, and what they log
# depends on the task. Only rank 0 may talk to a tracker: the covering-set test checks that each
# logger meets a distributed project too (pairing it with every distributed answer would add
# three projects, two of them distributed, to the slowest part of the suite). slurm writes a
# sweep's job array (sweep/slurm.py) and a batch script around scripts/launch.sh: neither reads
# a model, precision or compile flag, and slurm is asked only with a distributed strategy.
NARROW = {"logger": ("task",), "slurm": ("task", "distributed")}


def _paired(a: str, b: str) -> bool:
    return (a not in NARROW or b in NARROW[a]) and (b not in NARROW or a in NARROW[b])


def pairs(answers: Mapping[str, Any], names: Sequence[str]) -> set[Pair]:
    """Every pair of answers of two different questions in `answers` that must meet (NARROW)."""
    items = [(n, answers[n]) for n in names if n in answers]
    return {(a, b) for a, b in itertools.combinations(items, 2) if _paired(a[0], b[0])}


def required_pairs(names: Sequence[str]) -> set[Pair]:
    """Every pair of answers that some valid combination holds (`when` makes some impossible,
    such as slurm=true with distributed=none)."""
    found: set[Pair] = set()
    for combo in combinations(names):
        found |= pairs(combo, names)
    return found


def covering_array(
    names: Sequence[str],
    seeds: Iterable[Mapping[str, Any]] = (),
    cost: Callable[[Mapping[str, Any]], float] = lambda answers: 1,
    tries: int = 64,
) -> list[Answers]:
    """A cheap list of valid combinations in which every feasible pair of answers appears.

    Greedy by value: start from `seeds`, then repeatedly add the valid combination covering the
    most uncovered pairs per unit of `cost` (a positive number: what running its suite costs),
    then drop every added row whose pairs the others hold. Ties are broken by a seeded shuffle;
    of `tries` shuffles the cheapest result (then the shortest) wins, so the result is
    deterministic for a given copier.yml. Cheapest, not shortest: a suite with torchrun or
    torch.compile costs two or three plain ones, and two plain rows can stand in for it.
    """
    candidates = combinations(names)
    index: dict[Pair, int] = {}
    for combo in candidates:
        for pair in pairs(combo, names):
            index.setdefault(pair, len(index))

    def mask(answers: Mapping[str, Any]) -> int:  # the pairs of `answers`, as bits
        return sum(1 << index[p] for p in pairs(answers, names) if p in index)

    masks = [mask(c) for c in candidates]
    start = (1 << len(index)) - 1
    seeds = [dict(s) for s in seeds]
    for row in seeds:
        start &= ~mask(row)
    costs = [cost(c) for c in candidates]
    best: tuple[float, int, list[int]] | None = None
    for attempt in range(tries):
        order = list(range(len(candidates)))
        random.Random(attempt).shuffle(order)
        uncovered, picked = start, []
        while uncovered:
            pick = max(order, key=lambda i: (masks[i] & uncovered).bit_count() / costs[i])
            picked.append(pick)
            uncovered &= ~masks[pick]
        for row in sorted(picked, key=lambda i: -costs[i]):  # the dearest first
            others = [i for i in picked if i != row]
            if not start & ~functools.reduce(int.__or__, (masks[i] for i in others), 0):
                picked = others
        score = (sum(costs[i] for i in picked), len(picked), picked)
        if best is None or score[:2] < best[:2]:
            best = score
    assert best is not None
    return seeds + [candidates[i] for i in best[2]]


def suite_cost(answers: Mapping[str, Any]) -> int:
    """Rough relative cost of a generated suite: a plain one is 2; the tests that start torchrun
    (a few seconds a process group) add 2, torch.compile's few tests (a cold inductor compile
    on a CPU) add 1."""
    return 2 + 2 * (answers.get("distributed", "none") != "none") + bool(answers.get("compile"))


# --- rendering many combinations --------------------------------------------------------------


def isolation_env(root: Path) -> dict[str, str]:
    """What `ptscaffold_testing.isolated` sets, for a whole session: private caches, an empty
    HOME and git config, and no copier user settings (their defaults would change answers)."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.touch()
    settings = root / "copier-settings.yml"
    settings.write_text("{}\n")
    return {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PTSCAFFOLD_CACHE_DIR": str(root / "cache" / "ptscaffold"),
        "COPIER_CACHE_DIR": str(root / "cache" / "copier"),
        "COPIER_SETTINGS_PATH": str(settings),
    }


@contextlib.contextmanager
def environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def render(dest: Path, answers: Mapping[str, Any], template: Path) -> Path:
    """One project, the way a user gets it with `--defaults --no-git`."""
    import ptscaffold

    return ptscaffold.new(
        dest, data=dict(answers), defaults=True, git=False, quiet=True, template=str(template)
    )


def read_tree(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by path relative to it (posix)."""
    files = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath, name)
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


# Worker-process state (see `_init_worker`).
_WORKER: dict[str, Any] = {}


def _init_worker(template: str, env: dict[str, str], no_git_bin: str, scratch: str | None) -> None:
    """Set up a render process. Five speed-ups, all confined to these processes:

    - git is hidden (PATH is an empty folder). Copier runs `git config core.fileMode` once per
      rendered file to sync executable bits into the destination's git index; a destination
      outside any git repository makes that a no-op, but the ~30 subprocesses cost 60% of a
      render. Nothing else needs git: the template is a plain folder and `git=False`.
    - Jinja compiles each template source once. Copier builds a new Environment per render,
      so without this every render recompiles the same ~400 sources. The memo key holds the
      source and every Environment setting that changes the compiled code.
    - copier.yml is parsed once, not twice per render.
    - The answers are merged once per render while its files render (see below).
    - A part of a path that holds no Jinja is not rendered, and the answers file's path is
      rendered once per render (see below).

    test_template_render checks that these renders equal the ones made without the speed-ups.
    """
    os.environ.update(env)
    os.environ["PATH"] = no_git_bin
    from plumbum import local

    local.env["PATH"] = no_git_bin  # plumbum copied os.environ when it was imported

    import jinja2

    original = jinja2.Environment.compile
    memo: dict[tuple[Any, ...], Any] = {}

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        if not isinstance(source, str):  # a parsed template: compile as usual
            return original(self, source, name, filename, raw, defer_init)
        settings = (
            type(self),
            self.block_start_string, self.block_end_string,
            self.variable_start_string, self.variable_end_string,
            self.comment_start_string, self.comment_end_string,
            self.line_statement_prefix, self.line_comment_prefix,
            self.trim_blocks, self.lstrip_blocks, self.newline_sequence,
            self.keep_trailing_newline, self.optimized, self.is_async,
            repr(self.autoescape), self.finalize is not None,
            tuple(sorted(self.extensions)), tuple(sorted(self.filters)), tuple(sorted(self.tests)),
        )  # fmt: skip
        memo_key = (settings, source, name, filename, raw, defer_init)
        try:
            return memo[memo_key]
        except KeyError:
            memo[memo_key] = result = original(self, source, name, filename, raw, defer_init)
            return result

    jinja2.Environment.compile = compile

    # copier.yml is parsed twice per render (ptscaffold's questions, then copier's run), by the
    # pure-Python YAML loader: a quarter of a render. Parse it once; hand out copies.
    import copier._template

    load_config = copier._template.load_template_config
    parsed: dict[tuple[str, bool], Any] = {}

    def load_template_config(conf_path, quiet=False):
        config_key = (str(conf_path), quiet)
        if config_key not in parsed:
            parsed[config_key] = load_config(conf_path, quiet)
        return copy.deepcopy(parsed[config_key])

    copier._template.load_template_config = load_template_config

    # Copier builds its render context anew for every part of every path it renders (~900 times
    # a project), merging the answers' seven sources twice each time: a third of a render. While
    # it renders files the answers are settled, so merge them once per render in that phase
    # (every caller still gets a dict of its own, as copier gives it).
    import copier._main
    from copier._types import Phase
    from copier._user_data import AnswersMap

    def settled(
        compute: Callable[[Any], Any], own: Callable[[Any], Any] = dict
    ) -> Callable[[Any], Any]:
        """`compute(owner)` once per render while files render; each caller gets `own(it)`."""
        held: dict[int, tuple[Any, Any]] = {}

        def once_per_render(owner: Any) -> Any:
            if Phase.current() is not Phase.RENDER:
                return compute(owner)
            found = held.get(id(owner))
            if found is None or found[0] is not owner:  # an id reused by a later render's object
                held.clear()
                found = held[id(owner)] = (owner, own(compute(owner)))
            return own(found[1])

        return once_per_render

    AnswersMap.combined = property(settled(AnswersMap.combined.fget))
    remember = copier._main.Worker._answers_to_remember
    copier._main.Worker._answers_to_remember = settled(remember)

    # Most parts of a template path ("src", "tests", "test_config.py") hold no Jinja: with the
    # template's delimiters (all start with "{") and no line statements, they render to
    # themselves, yet copier compiles and renders each in a full context.
    render_string = copier._main.Worker._render_string

    def plain_parts_as_they_are(self, string, extra_context=None):
        if "{" not in string:
            return string
        return render_string(self, string, extra_context)

    copier._main.Worker._render_string = plain_parts_as_they_are

    # ...and each rendered part is compared with the answers file's path, which copier renders
    # anew for every comparison (~400 a project); while files render, it is settled too (a Path
    # cannot change, so every caller may share it).
    relpath = copier._main.Worker.answers_relpath.fget
    copier._main.Worker.answers_relpath = property(settled(relpath, own=lambda path: path))
    _WORKER.update(template=Path(template), sent=set(), scratch=scratch)


def _render_one(answers: Answers) -> tuple[dict[str, str] | str, dict[str, bytes], float]:
    """Render in a fresh temporary folder; return ({path: sha256}, contents not sent yet, CPU
    seconds), or (error text, {}, CPU seconds) when rendering fails."""
    cpu = time.process_time()
    template: Path = _WORKER["template"]
    sent: set[str] = _WORKER["sent"]
    with tempfile.TemporaryDirectory(prefix="ptscaffold-render-", dir=_WORKER["scratch"]) as tmp:
        try:
            project = render(Path(tmp) / PROJECT_FOLDER, answers, template)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}", {}, time.process_time() - cpu
        files = read_tree(project)
    manifest, new = {}, {}
    for path, content in files.items():
        sha = digest(content)
        manifest[path] = sha
        if sha not in sent:
            sent.add(sha)
            new[sha] = content
    return manifest, new, time.process_time() - cpu


def _scratch() -> str | None:
    """Where each project is rendered, read and deleted: memory (/dev/shm) where there is one;
    a render writes and deletes ~35 files, slow on some CI disks."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def render_many(
    combos: Sequence[Mapping[str, Any]], template: Path, workdir: Path, processes: int
) -> tuple[list[dict[str, str] | str], dict[str, bytes], float]:
    """Render every combination in `processes` worker processes, keeping nothing on disk.

    Returns, in the order of `combos`, each project's {path: sha256} (or the render error, a
    string); the content of every distinct file by sha256; the CPU seconds spent rendering.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workdir.mkdir(parents=True, exist_ok=True)
    no_git_bin = workdir / "empty-bin"
    no_git_bin.mkdir(exist_ok=True)
    env = isolation_env(workdir)
    manifests: list[dict[str, str] | str] = []
    contents: dict[str, bytes] = {}
    cpu = 0.0
    # spawn, not fork: the pytest process may hold threads (xdist's execnet)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=processes,
        mp_context=context,
        initializer=_init_worker,
        initargs=(str(template), env, str(no_git_bin), _scratch()),
    ) as pool:
        chunk = max(1, min(32, len(combos) // (processes * 4) or 1))
        for manifest, new, seconds in pool.map(
            _render_one, [dict(c) for c in combos], chunksize=chunk
        ):
            manifests.append(manifest)
            contents.update(new)
            cpu += seconds
    return manifests, contents, cpu


# Jinja's delimiters. `${{ ... }}` is GitHub Actions syntax, legitimate in .github/ only, and a
# `}}` that is two `}` tokens of Python code closes a nested literal (`{"model": {}}`).
RESIDUE = re.compile(r"\{\{|\}\}|\{%|%\}|\{#")
ACTIONS_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")


def _python_closing_braces(text: str) -> set[tuple[int, int]]:
    """(line, column) of each `}}` made of two adjacent `}` operator tokens."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return set()
    return {
        a.start
        for a, b in itertools.pairwise(tokens)
        if a.type == b.type == tokenize.OP and a.string == b.string == "}" and a.end == b.start
    }


def jinja_residue(path: str, text: str) -> list[str]:
    """Lines of the rendered file `path` that hold a Jinja delimiter."""
    braces = _python_closing_braces(text) if path.endswith(".py") else set()
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        scanned = ACTIONS_EXPRESSION.sub("", line) if path.startswith(".github/") else line
        hits = [m for m in RESIDUE.finditer(scanned) if (number, m.start()) not in braces]
        if hits:
            found.append(f"{path}:{number}: {line.strip()}")
    return found


# --- running tools -----------------------------------------------------------------------------


def ruff() -> list[str]:
    """The ruff of this interpreter's environment (the one the dev extra installs)."""
    import importlib.util

    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    found = shutil.which("ruff")
    if found is None:
        raise RuntimeError("ruff is not installed (pip install -e '.[dev]')")
    return [found]


def run_suite(
    project: Path, args: Sequence[str], env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest -q -p no:cacheprovider ARGS` in `project`, with this interpreter.

    stdout and stderr come back together in `stdout`. On timeout the whole process group is
    killed (a torchrun started by a test with it) and the returncode is -SIGKILL.
    """
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.Popen(
        command,
        cwd=project,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += f"\n[killed after {timeout:.0f} s]\n"
        return subprocess.CompletedProcess(command, -signal.SIGKILL, out, "")
    return subprocess.CompletedProcess(command, proc.returncode, out, "")


def tail(text: str, lines: int = 80) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
