"""Free-text answers land escaped in every file, or are refused with a one-line reason.

A property test over arbitrary unicode for each free-text answer: the rendered project's
pyproject.toml, Python files, YAML files and README parse, hold the answer as it was given
(TOML strings, the package docstring, the README's title and summary read back as text), and
pass the project's own ruff. Then the license and CI questions, and the one ruff version.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import ptscaffold
import pytest
import template_matrix as tm
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def render_free(
    template_snapshot: Path, isolation_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Mapping[str, Any]], Path | ptscaffold.AnswersError]:
    """Render `answers` into a new folder: the project, or the AnswersError that refused them."""

    def render(answers: Mapping[str, Any]) -> Path | ptscaffold.AnswersError:
        dest = tmp_path_factory.mktemp("answers") / tm.PROJECT_FOLDER
        try:
            with tm.environ(isolation_env):
                return tm.render(dest, answers, template_snapshot)
        except ptscaffold.AnswersError as exc:
            assert not dest.exists(), "a refused answer left files behind"
            return exc

    return render


def ruff_problems(project: Path) -> str:
    out = ""
    for command in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [*tm.ruff(), *command, "--no-cache", "."], cwd=project, capture_output=True, text=True
        )
        if proc.returncode != 0:
            out += proc.stdout + proc.stderr
    return out


def one_line(text: str) -> str:
    """What the README and the docstring keep of an answer: whitespace runs as one space."""
    return re.sub(r"\s+", " ", text).strip()


def markdown_text(source: str) -> list[tuple[str, str]]:
    """(block type, plain text) of each top-level block of a Markdown document."""
    blocks, tokens = [], MarkdownIt("commonmark").parse(source)
    for i, token in enumerate(tokens):
        if token.type == "inline":
            text = "".join(child.content for child in token.children or [])
            blocks.append((tokens[i - 1].type, text))
    return blocks


def check_project(project: Path, answers: Mapping[str, str]) -> None:
    files = tm.read_tree(project)
    # TOML: pyproject.toml parses and holds the answers exactly
    meta = tomllib.loads(files["pyproject.toml"].decode())["project"]
    assert meta["description"] == answers["description"]
    assert meta["authors"] == [{"name": answers["author_name"], "email": answers["author_email"]}]
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", meta["name"]), meta["name"]
    # Python: every file parses; the package docstring is the description
    package = next(
        p.split("/")[1] for p in files if p.startswith("src/") and p.endswith("/__init__.py")
    )
    for path, content in files.items():
        if path.endswith(".py"):
            tree = ast.parse(content.decode(), path)
            if path == f"src/{package}/__init__.py" and one_line(answers["description"]):
                docstring = ast.get_docstring(tree, clean=False) or ""
                assert one_line(docstring) == one_line(answers["description"])
    # YAML: the answers file and the workflow parse; the answers file holds the answers
    recorded = yaml.safe_load(files[".copier-answers.yml"])
    for key in ("project_name", "description", "author_name", "author_email"):
        assert recorded[key] == answers[key], key
    for path, content in files.items():
        if path.endswith((".yml", ".yaml")):
            yaml.safe_load(content)
    # Markdown: the title and the summary read back as the answers, as text, not markup
    blocks = markdown_text(files["README.md"].decode())
    assert blocks[0] == ("heading_open", one_line(answers["project_name"]))
    if one_line(answers["description"]):
        assert blocks[1] == ("paragraph_open", one_line(answers["description"]))
    # LICENSE: the author in the copyright line
    assert answers["author_name"] in files["LICENSE"].decode()
    assert not (problems := ruff_problems(project)), problems


TEXT = st.text(st.characters(codec="utf-8"), max_size=60)
# Markup, quotes and escapes, more often than arbitrary text finds them
NASTY = st.text(
    st.sampled_from(list("\"'\\`*_[]()<>#|~&!-+=.:;{}%$ 1aé漢🙂\u00a0\u3000")), max_size=40
)
DEFAULTS = {
    "project_name": "demo",
    "description": "A project",
    "author_name": "Ann",
    "author_email": "a@b.c",
}


@SETTINGS
@given(field=st.sampled_from(["project_name", "description", "author_name"]), value=TEXT | NASTY)
@example(field="description", value='C:\\Users\\me ends with "')
@example(field="project_name", value='The """ name')
@example(field="author_name", value='O"Brien \\')
@example(field="project_name", value="日本語")  # no ASCII: the distribution name is the package's
@example(field="description", value="- 1. > # not markup")
def test_any_text_answer_is_escaped_or_refused(render_free, field: str, value: str):
    answers = {**DEFAULTS, field: value}
    if field == "project_name":
        answers["package_name"] = "demo"  # the derived one is tested in test_names.py
    result = render_free(answers)
    if isinstance(result, ptscaffold.AnswersError):
        message = str(result)
        assert message and "\n" not in message.strip(), message
        assert field in message
        return
    check_project(result, answers)


@SETTINGS
@given(
    email=st.text(st.characters(codec="utf-8"), min_size=1, max_size=20).map(lambda s: f"{s}@x.org")
)
@example(email='"quoted"@x.org')
@example(email="back\\slash@x.org")
def test_any_email_is_escaped_or_refused(render_free, email: str):
    answers = {**DEFAULTS, "author_email": email}
    result = render_free(answers)
    if isinstance(result, ptscaffold.AnswersError):
        assert "author_email" in str(result) and "\n" not in str(result).strip()
        return
    check_project(result, answers)


@pytest.mark.parametrize(
    ("field", "value"),
    [("description", "two\nlines"), ("author_name", "tab\there"), ("project_name", "nul\x00")],
)
def test_control_characters_are_refused_with_the_reason(render_free, field: str, value: str):
    result = render_free({**DEFAULTS, "package_name": "demo", field: value})
    assert isinstance(result, ptscaffold.AnswersError)
    assert f"{field} must be one line" in str(result)


# --- license ---------------------------------------------------------------------------------


LICENSES = tm.questions()["license"].values
FIRST_LINES = {
    "MIT": "MIT License",
    "Apache-2.0": "Apache License",
    "BSD-3-Clause": "BSD 3-Clause License",
}


@pytest.mark.parametrize("license", LICENSES)
def test_license_renders_its_text_and_pyproject_field(render_project, license: str):
    project = render_project(tm.default_answers(tm.all_names(), license=license))
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    readme = (project / "README.md").read_text()
    if license == "proprietary":
        assert not (project / "LICENSE").exists()
        assert "license" not in meta
        assert "Private :: Do Not Upload" in meta["classifiers"]
        return
    text = (project / "LICENSE").read_text()
    assert text.lstrip().startswith(FIRST_LINES[license])
    assert meta["license"] == license
    assert "Private :: Do Not Upload" not in meta["classifiers"]
    assert re.search(r"Copyright (\(c\) )?\d{4},? Your Name$", text, re.MULTILINE)
    assert "[LICENSE](LICENSE)" in readme
    # the whole standard text, not an excerpt
    assert len(text) > {"MIT": 1000, "Apache-2.0": 11000, "BSD-3-Clause": 1400}[license]


@pytest.mark.parametrize("license", LICENSES)
def test_license_changes_no_python_file(render_project, license: str):
    default = tm.read_tree(render_project(tm.default_answers(tm.all_names())))
    other = tm.read_tree(render_project(tm.default_answers(tm.all_names(), license=license)))
    changed = {p for p in set(default) | set(other) if default.get(p) != other.get(p)}
    assert changed <= {"LICENSE", "pyproject.toml", "README.md", ".copier-answers.yml"}, changed


# --- CI operating systems --------------------------------------------------------------------


@pytest.mark.parametrize("ci_os", tm.questions()["ci_os"].values)
def test_ci_os_renders_the_matrix(render_project, ci_os: str):
    project = render_project(tm.default_answers(tm.all_names(), ci_os=ci_os))
    workflow = yaml.safe_load((project / ".github/workflows/tests.yml").read_text())
    job = workflow["jobs"]["test"]
    if ci_os == "all":
        assert job["strategy"]["matrix"]["os"] == [
            "ubuntu-latest",
            "macos-latest",
            "windows-latest",
        ]
        assert job["runs-on"] == "${{ matrix.os }}"
    else:
        assert job["runs-on"] == "ubuntu-latest" and "strategy" not in job
    steps = [step.get("run", "") for step in job["steps"]]
    assert "python -m pytest" in steps
    # Weekly, the tests against the week's dependencies; template updates have a workflow of
    # their own (tests/test_template_update_workflow.py)
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["schedule"] and "workflow_dispatch" in triggers
    assert list(workflow["jobs"]) == ["test"]


def test_no_ci_no_workflow_and_nothing_else_changes(render_project):
    """ci is not among the render test's flags (tm.NOT_FLAGS): it must render the workflows
    (and their script) only."""
    default = tm.read_tree(render_project(tm.default_answers(tm.all_names())))
    other = tm.read_tree(render_project(tm.default_answers(tm.all_names(), ci=False)))
    changed = {p for p in set(default) | set(other) if default.get(p) != other.get(p)}
    github = {
        ".github/workflows/tests.yml",
        ".github/workflows/template-update.yml",
        ".github/scripts/template-update.sh",
    }
    assert changed == {*github, "README.md", ".copier-answers.yml"}, changed
    assert not github & set(other)
    # The README loses exactly the section on the template-update workflow
    section = re.search(
        rb"## Template updates as pull requests\n.*?\n(?=## )", default["README.md"], re.S
    )
    assert section is not None
    assert default["README.md"].replace(section.group(0), b"") == other["README.md"]


# --- one ruff --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [{}, {"timm": True}, {"task": "language_model"}],
    ids=["classification", "timm", "language_model"],
)
def test_the_dev_extra_installs_matplotlib_for_the_pngs_the_readme_shows(render_project, overrides):
    """A project set up with `.[dev]`, as the README says, draws results.png and the run plots."""
    project = render_project(tm.default_answers(tm.all_names(), **overrides))
    extras = tomllib.loads((project / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(extras["plot"]) <= set(extras["dev"]), extras["dev"]


def test_pre_commit_and_dev_extra_pin_the_same_ruff_as_these_tests_use(render_project):
    project = render_project(tm.default_answers(tm.all_names()))
    dev = tomllib.loads((project / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pins = [m.group(1) for dep in dev["dev"] if (m := re.fullmatch(r"ruff==(\S+)", dep))]
    hooks = yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"]
    revs = [repo["rev"] for repo in hooks if repo["repo"].endswith("/ruff-pre-commit")]
    assert len(pins) == 1 and revs == [f"v{pins[0]}"], (pins, revs)
    # The template's formatting is checked with this ruff: it must be the one users get
    installed = subprocess.run([*tm.ruff(), "--version"], capture_output=True, text=True).stdout
    assert installed.split()[-1] == pins[0], (
        f"these tests run {installed.strip()}, the template pins {pins[0]}"
    )
