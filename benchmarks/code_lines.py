"""16. The generated package's size in code lines, per module.

A code line is a line that holds code as Python's own `tokenize` and `ast` see it: comments,
blank lines and docstrings (the string that opens a module, class or function) are not code.
Renders the default project of each task (or counts the projects given) and prints, per module
under `src/<package>/`, its code lines; with `--rev REV` the same renders from the template at a
git revision of this repository too, side by side.

    python -m benchmarks.code_lines                       # today's defaults
    python -m benchmarks.code_lines --rev 8a2cebd         # ...and the same at 8a2cebd
    python -m benchmarks.code_lines path/to/project ...   # projects already rendered
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

from benchmarks import common

ROOT = Path(__file__).resolve().parents[1]
NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
NOT_CODE |= {tokenize.ENCODING, tokenize.ENDMARKER}
TASKS = ("classification", "language_model")


def code_lines(source: str) -> int:
    """The lines of `source` that hold a token of code, docstrings left out."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines -= set(range(first.lineno, first.end_lineno + 1))
    return len(lines)


def package_sizes(project: Path) -> dict[str, int]:
    """Code lines of each module under the project's `src/<package>/`."""
    (package,) = (p for p in (project / "src").iterdir() if p.is_dir())
    return {
        path.relative_to(package).as_posix(): code_lines(path.read_text(encoding="utf-8"))
        for path in sorted(package.rglob("*.py"))
    }


def render_at(rev: str | None, work: Path, task: str) -> Path:
    """The default project of `task`, from this checkout or from the template at `rev`."""
    if rev is None:
        return common.render(work, task)[0]
    tree = work / f"template-{rev}"
    if not tree.exists():
        git = ["git", "worktree", "add", "--detach", str(tree), rev]
        subprocess.run(git, cwd=ROOT, check=True, capture_output=True)
    dest = work / f"{task}-{rev}"
    command = [sys.executable, "-m", "ptscaffold", "new", str(dest), "--defaults", "--no-git"]
    env = {**os.environ, "PYTHONPATH": str(tree / "generator")}
    subprocess.run([*command, "--data", f"task={task}"], check=True, capture_output=True, env=env)
    return dest


def table(columns: dict[str, dict[str, int]]) -> str:
    names = sorted({module for sizes in columns.values() for module in sizes})
    lines = ["| module | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name in names:
        cells = [str(sizes[name]) if name in sizes else "-" for sizes in columns.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"**{sum(sizes.values()):,}**" for sizes in columns.values()]
    lines.append("| **total** | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*", type=Path, help="rendered projects to count")
    parser.add_argument("--rev", help="also count the default renders of this git revision")
    args = parser.parse_args()
    if args.projects:
        print(table({p.name: package_sizes(p) for p in args.projects}))
        return
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        common.isolate_caches(work)
        columns = {}
        for task in TASKS:
            if args.rev:
                columns[f"{task} {args.rev}"] = package_sizes(render_at(args.rev, work, task))
            columns[f"{task} now"] = package_sizes(render_at(None, work, task))
        print(table(columns))
        if args.rev:
            tree = work / f"template-{args.rev}"
            remove = ["git", "worktree", "remove", "--force", str(tree)]
            subprocess.run(remove, cwd=ROOT, capture_output=True)


if __name__ == "__main__":
    main()
