"""The generator's own code: short functions, one way to run git, no module reading another's
private names, and copier's private API in one module, checked at import."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import typer
from ptscaffold import _copier_api, cli
from ptscaffold.errors import CopierIncompatible
from ptscaffold_testing import (
    REPO_ROOT,
    isolated,  # noqa: F401
    ptscaffold_cache,  # noqa: F401
)

PACKAGE = REPO_ROOT / "generator" / "ptscaffold"
MODULES = sorted(PACKAGE.glob("*.py"))
MAX_FUNCTION_LINES = 60


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def test_no_function_is_longer_than_60_lines():
    long = [
        f"{path.name}:{node.lineno} {node.name}() is {node.end_lineno - node.lineno + 1} lines"
        for path in MODULES
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def _sibling_modules(tree: ast.Module) -> set[str]:
    """The package's modules a module imports as names (`from . import _cache`)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None
        for alias in node.names
    }


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_uses_another_modules_private_names():
    found = []
    for path in MODULES:
        tree = _tree(path)
        siblings = _sibling_modules(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                found += [
                    f"{path.name}:{node.lineno} imports {node.module}.{alias.name}"
                    for alias in node.names
                    if _private(alias.name)
                ]
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in siblings
                and _private(node.attr)
            ):
                found.append(f"{path.name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert found == []


def _runs_git(node: ast.AST) -> bool:
    """A call whose program is `git`: `run(["git", ...])` or `execvpe("git", ...)`."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.List) and first.elts:
        first = first.elts[0]
    return isinstance(first, ast.Constant) and first.value == "git"


def test_git_runs_through_one_function():
    starts = {path.name for path in MODULES for node in ast.walk(_tree(path)) if _runs_git(node)}
    # _remote.py hands its process over to git's upload-pack (exec), in the cache's git
    # environment: it runs nothing itself
    assert starts == {"_git.py", "_remote.py"}
    importers = {
        path.name
        for path in MODULES
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Import) and any(a.name == "subprocess" for a in node.names)
    }
    assert importers == {"_git.py", "_aftercheck.py"}  # _aftercheck runs the project's Python


def test_only_one_module_imports_copiers_private_modules():
    importers = {
        path.name
        for path in MODULES
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ImportFrom)
        and node.level == 0
        and (node.module or "").startswith("copier._")
    }
    assert importers == {"_copier_api.py"}


# --- copier's private API, checked at import -----------------------------------------------------


def test_the_installed_copier_has_what_ptscaffold_relies_on():
    assert _copier_api.problems(_copier_api.CLASSES) == []
    _copier_api.check(_copier_api.CLASSES)


def _without(cls: type, name: str, **replaced: object) -> type:
    """A stand-in for copier's class `cls` as a release that dropped `name` (or changed the
    members in `replaced`) would have it."""
    members = {k: v for k, v in vars(cls).items() if k != name}
    return type(cls.__name__, (), {**members, **replaced})


def _classes(**changed: type) -> dict[str, type]:
    return {**_copier_api.CLASSES, **changed}


@pytest.mark.parametrize(
    ("cls", "member", "said"),
    [
        ("Worker", "_render_allowed", "Worker._render_allowed is gone"),
        ("Worker", "_render_context", "Worker._render_context is gone"),
        ("Question", "_formatted_choices", "Question._formatted_choices is gone"),
        ("AnswersMap", "hide", "AnswersMap.hide is gone"),
    ],
)
def test_a_copier_without_a_method_is_refused_in_one_line(cls, member, said):
    changed = _without(_copier_api.CLASSES[cls], member)
    with pytest.raises(CopierIncompatible) as refused:
        _copier_api.check(_classes(**{cls: changed}))
    message = str(refused.value)
    assert said in message and "\n" not in message
    assert message.startswith("ptscaffold does not work with the installed copier 9.")
    assert f"copier{_copier_api.COPIER_RANGE}" in message


def test_a_changed_signature_is_refused():
    worker = _copier_api.CLASSES["Worker"]

    def _render_allowed(self, dst_relpath, is_dir=False):  # a parameter fewer
        return True

    changed = _without(worker, "_render_allowed", _render_allowed=_render_allowed)
    found = _copier_api.problems(_classes(Worker=changed))
    assert found == [
        "Worker._render_allowed takes (self, dst_relpath, is_dir), not (self, dst_relpath, "
        "is_dir, is_symlink, expected_contents, expected_mode)"
    ]


def test_a_copier_that_no_longer_calls_an_overridden_method_is_refused(tmp_path, monkeypatch):
    """copier's own Worker source must still call `_render_allowed` (the update's protection)."""
    source = tmp_path / "fake_copier_main.py"
    source.write_text(
        "class Worker:\n"
        "    def _ask(self):\n        pass\n\n"
        "    def run(self):\n        self._ask()\n        self._may_render()\n\n"
        "    def _render_allowed(self, dst_relpath, is_dir=False, is_symlink=False,\n"
        "                        expected_contents=b'', expected_mode=None):\n"
        "        return True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import fake_copier_main

    real = _copier_api.CLASSES["Worker"]
    members = {k: v for k, v in vars(real).items() if k not in vars(fake_copier_main.Worker)}
    for name, value in members.items():
        setattr(fake_copier_main.Worker, name, value)
    assert _copier_api.problems(_classes(Worker=fake_copier_main.Worker)) == [
        "Worker no longer calls _render_allowed"
    ]
    sys.modules.pop("fake_copier_main", None)


def test_the_command_says_it_in_one_line_and_exits_1(capsys):
    changed = _without(_copier_api.CLASSES["Worker"], "_ask")
    with pytest.raises(typer.Exit) as stopped:
        cli._run(_copier_api.check, _classes(Worker=changed))
    assert stopped.value.exit_code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ptscaffold does not work with")


def test_the_checked_range_is_the_pinned_one():
    """The range the message names is pyproject.toml's pin (tests/test_copier_versions.py runs
    its lowest release, the suite its highest)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert f"copier{_copier_api.COPIER_RANGE}" in project["dependencies"]


def test_the_command_stops_before_anything_when_copier_lacks_a_method(tmp_path):
    """The real command, on a copier whose Worker lost `_render_allowed` (as a release renaming
    it would have it): one line, exit 1, nothing made."""
    script = (
        "import sys\n"
        "import copier._main\n"
        "del copier._main.Worker._render_allowed\n"
        "from ptscaffold.cli import main\n"
        "sys.argv = ['ptscaffold', 'new', sys.argv[1], '--defaults', '--no-git']\n"
        "main()\n"
    )
    dest = tmp_path / "proj"
    proc = subprocess.run([sys.executable, "-c", script, str(dest)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert (
        proc.stderr.startswith("error: ptscaffold does not work with the installed copier 9.")
        and "Worker._render_allowed is gone" in proc.stderr
    )
    assert not dest.exists()


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on pyproject.toml's contracts, for the package `ptscaffold` in `root`."""
    command = [
        str(Path(sys.executable).with_name("lint-imports")),
        "--no-cache",
        str(REPO_ROOT / "pyproject.toml"),
    ]
    return subprocess.run(
        command, cwd=root, env={"PYTHONPATH": str(root)}, capture_output=True, text=True
    )


def test_modules_import_only_the_layers_below_them(tmp_path: Path):
    assert lint_imports(REPO_ROOT / "generator").returncode == 0
    # ...and the contract holds something: errors.py, at the bottom, importing the CLI breaks it
    copy = tmp_path / "ptscaffold"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.bundle"))
    with (copy / "errors.py").open("a", encoding="utf-8") as f:
        f.write("\nfrom . import cli  # noqa: E402\n")
    broken = lint_imports(tmp_path)
    assert broken.returncode != 0 and "ptscaffold.errors -> ptscaffold.cli" in broken.stdout
