"""Project and package names: bad ones are refused with the reason, good ones import."""

from __future__ import annotations

import keyword
import os
import subprocess
import sys

import ptscaffold
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptscaffold import AnswersError, _template
from ptscaffold_testing import isolated, ptscaffold_cache  # noqa: F401


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
        ({"project_name": "Torch"}, "shadow"),  # derived package name `torch`
    ],
)
def test_bad_names_are_refused_with_the_reason(tmp_path, data, needle):
    with pytest.raises(AnswersError, match=needle):
        ptscaffold.new(tmp_path / "proj", data=data, defaults=True, quiet=True)
    assert not (tmp_path / "proj").exists()


names = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789 -_."),
    min_size=1,
    max_size=20,
)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=names)
def test_every_accepted_name_renders_an_importable_package(tmp_path_factory, name):
    dest = tmp_path_factory.mktemp("names") / "proj"
    try:
        project = ptscaffold.new(
            dest, data={"project_name": name}, defaults=True, git=False, quiet=True
        )
    except AnswersError as exc:
        assert str(exc)  # refused, with a reason
        assert not dest.exists()
        return
    answers = (project / ".copier-answers.yml").read_text()
    package = next(
        line.split(":", 1)[1].strip() for line in answers.splitlines()
        if line.startswith("package_name:")
    )  # fmt: skip
    assert package.isidentifier() and not keyword.iskeyword(package)
    assert package not in _template.load_config()["reserved_names"]["default"].split()
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", f"import {package}"], cwd=project, env=env, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr.decode()
