"""Project and package names: bad ones are refused with the reason, good ones import."""

from __future__ import annotations

import keyword
import os
import subprocess
import sys

import ptscaffold
import pytest
import template_matrix as tm
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptscaffold import AnswersError, _questions
from ptscaffold_testing import isolated, ptscaffold_cache  # noqa: F401
from test_template_projects import COVERED, COVERING


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"project_name": ""}, "must not be empty"),
        ({"project_name": "   "}, "must not be empty"),
        ({"project_name": "a/b"}, "must not contain"),
        ({"project_name": "a\\b"}, "must not contain"),
        ({"project_name": "..x"}, "must not contain"),
        ({"project_name": "ok", "package_name": "9lives"}, "lowercase Python identifier"),
        ({"project_name": "ok", "package_name": "my-pkg"}, "lowercase Python identifier"),
        ({"project_name": "ok", "package_name": "class"}, "keyword"),
        ({"project_name": "ok", "package_name": "lambda"}, "keyword"),
        ({"project_name": "ok", "package_name": "torch"}, "shadow"),
        ({"project_name": "ok", "package_name": "json"}, "shadow"),
        ({"project_name": "ok", "package_name": "numpy"}, "shadow"),
    ],
)
def test_bad_names_are_refused_with_the_reason(tmp_path, data, needle):
    with pytest.raises(AnswersError, match=needle):
        ptscaffold.new(tmp_path / "proj", data=data, defaults=True, quiet=True)
    assert not (tmp_path / "proj").exists()


@pytest.mark.parametrize(
    ("project_name", "package"),
    [
        # the example: 43 characters, shortened at a word boundary
        ("My Image Classifier Experiments For Science", "my_image_classifier_experiments_for"),
        ("3D Vision", "project_3d_vision"),  # a leading digit
        ("Torch", "torch_project"),  # would shadow a dependency
        ("json", "json_project"),  # would shadow the standard library
        ("class", "class_project"),  # a keyword
        ("日本語の実験", "project"),  # no ASCII letter or digit
        ("a" * 45, "a" * 40),  # one word longer than the limit
    ],
)
def test_the_derived_package_name_is_always_valid(tmp_path, project_name, package):
    project = ptscaffold.new(
        tmp_path / "proj", data={"project_name": project_name}, defaults=True, git=False, quiet=True
    )
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["package_name"] == package
    assert (project / "src" / package / "train.py").is_file()


# Project names as users type them: any letters (accents, other scripts), digits first, spaces and
# punctuation, Python keywords and module names; the validator refuses only the empty name, a
# path and control characters, so every other name must render a project that passes ruff.
project_names = st.one_of(
    st.text(
        alphabet=st.sampled_from("abcxyzABCXYZ0123456789 -_.'\"éüøßЖж日本ñç&!"),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from([*keyword.kwlist, "torch", "json", "random", "test", "src", "numpy"]),
    st.lists(
        st.sampled_from(["Deep", "vision", "2024", "ÉTUDE", "for", "class", "мир"]),
        min_size=1,
        max_size=12,
    ).map(" ".join),
).filter(lambda name: name.strip() and not any(bad in name for bad in ("/", "\\", "..")))


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=project_names)
def test_every_project_name_renders_a_project_that_imports_and_passes_ruff(tmp_path_factory, name):
    dest = tmp_path_factory.mktemp("names") / "proj"
    project = ptscaffold.new(
        dest, data={"project_name": name}, defaults=True, git=False, quiet=True
    )
    package = yaml.safe_load((project / ".copier-answers.yml").read_text())["package_name"]
    assert package.isidentifier() and not keyword.iskeyword(package) and len(package) <= 40
    assert package not in _questions.bundled().questions["reserved_names"].default.split()
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", f"import {package}"], cwd=project, env=env, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert not (problems := _ruff_problems(project)), f"{name!r}\n{problems}"


# --- names of every length, across the flags ---------------------------------------------------
# The covering set of test_template_projects (every pair of flag answers) crossed with names of
# every length the validators allow: the rendered project passes its own ruff check and format
# check (an import line, a string or a docstring grows with the package name).

MAX_PACKAGE = 40  # copier.yml: package_name is at most 40 characters
words = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=1, max_size=12)
long_names = (
    st.lists(words, min_size=1, max_size=8)
    .map(" ".join)
    .filter(lambda name: len(name) <= MAX_PACKAGE)
)


def _ruff_problems(project) -> str:
    out = ""
    for command in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [*tm.ruff(), *command, "--no-cache", "."], cwd=project, capture_output=True, text=True
        )
        if proc.returncode:
            out += proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def render_named(template_snapshot, isolation_env, tmp_path_factory):
    def render(answers):
        dest = tmp_path_factory.mktemp("named") / "proj"
        with tm.environ(isolation_env):
            return tm.render(dest, answers, template_snapshot)

    return render


def test_a_package_name_longer_than_the_limit_is_refused(tmp_path):
    """A name the user types is checked (a derived one is shortened instead)."""
    with pytest.raises(AnswersError, match="longer than 40 characters"):
        ptscaffold.new(
            tmp_path / "p",
            data={"project_name": "ok", "package_name": "a" * (MAX_PACKAGE + 1)},
            defaults=True,
            quiet=True,
        )
    assert not (tmp_path / "p").exists()


def _with_license_and_os(i: int, answers: dict) -> dict:
    """Row i of the covering set, with the i-th license and CI choice (round robin)."""
    questions = tm.questions()
    crossed = {
        **answers,
        "license": questions["license"].values[i % len(questions["license"].values)],
    }
    crossed["ci_os"] = questions["ci_os"].values[i % len(questions["ci_os"].values)]
    return crossed


CROSSED = [_with_license_and_os(i, row) for i, row in enumerate(COVERING)]


def test_the_crossed_rows_hold_every_license_and_ci_os():
    assert {row["license"] for row in CROSSED} == set(tm.questions()["license"].values)
    assert {row.get("ci_os") for row in CROSSED} >= set(tm.questions()["ci_os"].values)


@pytest.mark.parametrize("answers", CROSSED, ids=tm.label)
def test_the_longest_package_name_passes_ruff_with_every_flag_pair(render_named, answers):
    name = "x" * MAX_PACKAGE
    project = render_named({**answers, "project_name": name})
    assert (project / "src" / name / "__init__.py").is_file()
    assert not (problems := _ruff_problems(project)), problems


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=long_names, answers=st.sampled_from(COVERING))
def test_names_of_any_length_pass_ruff(render_named, name, answers):
    project = render_named({**answers, "project_name": name})
    assert not (problems := _ruff_problems(project)), f"{name!r} {tm.label(answers)}\n{problems}"


def test_the_long_example_name_reaches_a_generated_suite_of_each_task():
    """The issue's own example, "My Image Classifier Experiments", is the name of covering-set
    projects of both tasks, whose generated suites (ruff included, tests/test_style.py) run in
    test_template_projects.py: a suite of its own here would run the same tests again."""
    example = "My Image Classifier Experiments"
    tasks = {row["task"] for row in COVERED if row.get("project_name") == example}
    assert tasks == set(tm.questions()["task"].values)
