"""The generated package holds no import cycle and no dead code, in every combination.

Static analysis (`ast`) of the renders of the whole matrix (the `matrix` fixture of
test_template_render, rendered once per test run): each distinct file is parsed once, and each
combination then only joins what its files import, define and reference.

- No import cycle among the package's modules, counting the imports inside functions too: every
  arrow points down (entry points -> what users edit -> machinery), so a module can be read, and
  imported, without the ones above it.
- Every top-level function, class and module-level constant of the package is referenced
  somewhere else in that render (the package or its tests), or is an entry point: generated code
  nobody calls is code a user reads for nothing.

A reference is resolved through imports: `from .shards import read` in one module, then `read(...)`,
references `read` of shards; `from . import shards` then `shards.write(...)` references `write` of
shards; a bare name references its own module's definition. A name merely spelled alike in
another module (`f.write(...)`) references nothing.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pytest
import template_matrix as tm
from test_template_render import Matrix, matrix  # noqa: F401 (the fixture, shared per run)

PACKAGE_ROOT = f"src/{tm.PACKAGE}/"
TESTS_ROOT = "tests/"
# Definitions that nothing in the package calls by design: what `python -m` runs
ENTRY_POINTS = frozenset({"main", "cli"})

Ref = tuple[str, str]  # (module, name): `name` as defined at the top level of `module`


def module_name(path: str) -> str | None:
    """The dotted module of a package file (`src/demo/data/loading.py` ->
    `demo.data.loading`), None outside the package."""
    if not path.startswith(PACKAGE_ROOT) or not path.endswith(".py"):
        return None
    parts = path.removeprefix("src/").removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module an import names, relative ones resolved against `module`."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, *([node.module] if node.module else [])])


@dataclass(frozen=True)
class FileFacts:
    """What one file imports, defines and references, whatever else the project holds."""

    # Modules it imports (with `from X import y`, both X and X.y: which one is a module depends
    # on the project and is settled by `import_edges`)
    imports: frozenset[str]
    # Top-level functions, classes and constants (package files only)
    defines: frozenset[str]
    # Every (module, name) it references, outside the definition of that name
    references: frozenset[Ref]


def _top_level_names(tree: ast.Module) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return {name: node for name, node in names.items() if not name.startswith("__")}


def _bindings(tree: ast.Module, module: str, is_package: bool) -> dict[str, list[Ref | str]]:
    """What each imported name stands for: a (module, name) definition, or a module (a str)."""
    bound: dict[str, list[Ref | str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound.setdefault(alias.asname, []).append(alias.name)
                else:  # `import a.b` binds `a`; `a.b.c` is read as attributes of it
                    bound.setdefault(alias.name.split(".")[0], []).append(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node)
            for alias in node.names:
                local = alias.asname or alias.name
                bound.setdefault(local, []).extend([(source, alias.name), f"{source}.{alias.name}"])
    return bound


def _dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def file_facts(path: str, text: str) -> FileFacts:
    tree = ast.parse(text, filename=path)
    module = module_name(path)
    is_package = path.endswith("/__init__.py")
    own = module or path  # a test file's names are referenced by nothing we check
    defined = _top_level_names(tree) if module else {}
    bound = _bindings(tree, own, is_package)

    imports: set[str] = set()
    references: set[Ref] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(own, is_package, node)
            imports.add(source)
            for alias in node.names:
                imports.add(f"{source}.{alias.name}")
                references.add((source, alias.name))

    def refer(node: ast.expr, outside: ast.stmt | None) -> None:
        parts = _dotted(node)
        if not parts:
            return
        head, rest = parts[0], parts[1:]
        if head in defined and defined[head] is not outside:
            references.add((own, head))
        for target in bound.get(head, []):
            base = target if isinstance(target, str) else f"{target[0]}.{target[1]}"
            # `shards.write` references `write` of the module `shards` stands for; `a.b.c`,
            # `c` of `a.b` (or `b` of `a`, when `b` is no module)
            for depth in range(len(rest)):
                references.add((".".join([base, *rest[:depth]]), rest[depth]))

    for statement in tree.body:
        # A definition's own body does not keep it alive (recursion), its neighbours' do
        owner = statement if statement in defined.values() else None
        for node in ast.walk(statement):
            if isinstance(node, (ast.Name, ast.Attribute)):
                refer(node, owner)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                references.update(_named_in_string(node.value))
    return FileFacts(frozenset(imports), frozenset(defined), frozenset(references))


def _named_in_string(text: str) -> Iterable[Ref]:
    """`"demo.runtime.device.available_cpus"` (a monkeypatch target) or `"demo.train:main"`."""
    if not text.startswith(f"{tm.PACKAGE}.") or " " in text:
        return ()
    module, sep, name = text.replace(":", ".").rpartition(".")
    return [(module, name)] if sep else ()


# --- a whole project -------------------------------------------------------------------------


def import_edges(facts: Mapping[str, FileFacts]) -> dict[str, set[str]]:
    """module -> the package modules it imports (anywhere in it, functions included)."""
    modules = {module_name(path): fact for path, fact in facts.items() if module_name(path)}
    return {
        module: {target for target in fact.imports if target in modules and target != module}
        for module, fact in modules.items()
    }


def import_cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(groups)


def unreferenced(facts: Mapping[str, FileFacts]) -> list[str]:
    """`module.name` of each top-level definition of the package that nothing references."""
    referenced = set().union(*(fact.references for fact in facts.values()))
    found = []
    for path, fact in facts.items():
        module = module_name(path)
        if module is None:
            continue
        found += [
            f"{module}.{name}"
            for name in sorted(fact.defines)
            if name not in ENTRY_POINTS and (module, name) not in referenced
        ]
    return found


# --- the matrix ------------------------------------------------------------------------------


def _checked(path: str) -> bool:
    return path.endswith(".py") and path.startswith((PACKAGE_ROOT, TESTS_ROOT))


@pytest.fixture(scope="module")
def projects(matrix: Matrix) -> list[tuple[dict[str, FileFacts], str]]:  # noqa: F811
    """Each distinct project (its checked files) with the first combination that renders it."""

    @functools.cache
    def facts_of(path: str, sha: str) -> FileFacts:
        return file_facts(path, matrix.contents[sha].decode("utf-8"))

    seen: dict[frozenset[tuple[str, str]], str] = {}
    for combo, manifest in zip(matrix.combos, matrix.manifests, strict=True):
        files = frozenset((path, sha) for path, sha in manifest.items() if _checked(path))
        if files:
            seen.setdefault(files, tm.label(combo) or "defaults")
    return [
        ({path: facts_of(path, sha) for path, sha in files}, label) for files, label in seen.items()
    ]


def _report(title: str, found: dict[str, list[str]], limit: int = 40) -> None:
    """Fail listing each distinct finding once, with the combinations that have it."""
    by_finding: dict[str, list[str]] = {}
    for label, items in found.items():
        for item in items:
            by_finding.setdefault(item, []).append(label)
    lines = [
        f"{item}\n    in {len(labels)} combination(s), e.g. {', '.join(labels[:3])}"
        for item, labels in sorted(by_finding.items())
    ]
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    pytest.fail(f"{title} ({len(lines)}):\n" + "\n".join(lines[:limit]) + more, pytrace=False)


def test_no_import_cycle(projects: list[tuple[dict[str, FileFacts], str]]):
    found = {}
    for facts, label in projects:
        cycles = import_cycles(import_edges(facts))
        if cycles:
            found[label] = [" <-> ".join(group) for group in cycles]
    if found:
        _report("import cycles among the package's modules", found)


def test_every_definition_is_referenced(projects: list[tuple[dict[str, FileFacts], str]]):
    found = {}
    for facts, label in projects:
        dead = unreferenced(facts)
        if dead:
            found[label] = dead
    if found:
        _report("top-level definitions nothing references (delete them, or use them)", found)


# --- the checks can fail -----------------------------------------------------------------------


def _facts(files: Mapping[str, str]) -> dict[str, FileFacts]:
    return {path: file_facts(path, text) for path, text in files.items()}


def test_a_lazy_import_closes_a_cycle():
    files = {
        f"{PACKAGE_ROOT}__init__.py": "",
        f"{PACKAGE_ROOT}a.py": "from .b import g\n\n\ndef f():\n    return g()\n",
        f"{PACKAGE_ROOT}b.py": "def g():\n    from . import a\n\n    return a\n",
        f"{PACKAGE_ROOT}c.py": "from . import a\n",
    }
    assert import_cycles(import_edges(_facts(files))) == [[f"{tm.PACKAGE}.a", f"{tm.PACKAGE}.b"]]
    files[f"{PACKAGE_ROOT}b.py"] = "def g():\n    return 1\n"  # the lazy import gone
    assert import_cycles(import_edges(_facts(files))) == []


def test_names_alike_are_not_references():
    pkg = tm.PACKAGE
    files = {
        f"{PACKAGE_ROOT}__init__.py": "",
        f"{PACKAGE_ROOT}shards.py": (
            "LIMIT = 3\n\n\ndef read():\n    return LIMIT\n\n\n"
            "def write(f):\n    return write(f)\n\n\n"  # its own body does not keep it alive
            "def _helper():\n    return 1\n\n\nclass Unused:\n    pass\n"
        ),
        f"{PACKAGE_ROOT}train.py": (
            "from . import shards\n\n\ndef main(f):\n    f.write(shards.read())\n"
            "    return _helper\n"
        ),
        f"{TESTS_ROOT}test_x.py": f"from {pkg}.shards import _helper as h\n\nh()\n",
    }
    assert unreferenced(_facts(files)) == [f"{pkg}.shards.Unused", f"{pkg}.shards.write"]
