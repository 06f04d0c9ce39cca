"""Answers are checked before anything is written; each refusal is one line with the reason."""

from __future__ import annotations

import ptscaffold
import pytest
from ptscaffold import AnswersError
from ptscaffold_testing import invoke, isolated, ptscaffold_cache  # noqa: F401


def _refused(tmp_path, *args: str) -> str:
    dest = tmp_path / "proj"
    result = invoke("new", str(dest), "--defaults", *args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not dest.exists()
    assert {p.name for p in tmp_path.iterdir()} <= {"home", "answers.yml"}
    return result.stderr


def test_unknown_key_suggests_the_closest_question(tmp_path):
    message = _refused(tmp_path, "--data", "amp_mode=bf16")
    assert "unknown question 'amp_mode'" in message
    assert "did you mean 'amp'?" in message


def test_unknown_key_without_a_close_match_lists_the_questions(tmp_path):
    message = _refused(tmp_path, "--data", "zzzzzz=1")
    assert "did you mean" not in message and "distributed" in message


def test_bad_choice_lists_valid_choices(tmp_path):
    message = _refused(tmp_path, "--data", "amp=fp8")
    assert "amp=fp8" in message and "none, bf16, fp16" in message


def test_wrong_type_for_a_bool(tmp_path):
    message = _refused(tmp_path, "--data", "compile=maybe")
    assert "compile expects true or false" in message and "maybe" in message


def test_computed_value_cannot_be_set(tmp_path):
    assert "computed" in _refused(tmp_path, "--data", "template_version=9.9.9")


def test_data_without_equals_sign(tmp_path):
    assert "KEY=VALUE" in _refused(tmp_path, "--data", "amp")


def test_malformed_data_file(tmp_path):
    data_file = tmp_path / "answers.yml"
    data_file.write_text("amp: [bf16\n")
    message = _refused(tmp_path, "--data-file", str(data_file))
    assert "not valid YAML" in message and "line" in message


def test_data_file_that_is_not_a_mapping(tmp_path):
    data_file = tmp_path / "answers.yml"
    data_file.write_text("- amp\n- bf16\n")
    assert "mapping" in _refused(tmp_path, "--data-file", str(data_file))


def test_unreadable_data_file(tmp_path):
    message = _refused(tmp_path, "--data-file", str(tmp_path / "missing.yml"))
    assert "cannot read answers file" in message


def test_data_file_answers_are_checked_too(tmp_path):
    data_file = tmp_path / "answers.yml"
    data_file.write_text("compile: sometimes\n")
    assert "compile expects true or false" in _refused(tmp_path, "--data-file", str(data_file))


def test_data_wins_over_data_file(tmp_path):
    data_file = tmp_path / "answers.yml"
    data_file.write_text("amp: fp16\n_src_path: ignored\n")
    dest = ptscaffold.new(
        tmp_path / "p", data_file=data_file, data={"amp": "bf16"}, defaults=True, quiet=True
    )
    assert "amp: bf16" in (dest / ".copier-answers.yml").read_text()


def test_impossible_combination_is_refused_with_the_reason(tmp_path):
    message = _refused(tmp_path, "--data", "slurm=true", "--data", "distributed=none")
    assert "slurm" in message and "distributed" in message and "none" in message


def test_impossible_combination_with_default_distributed(tmp_path):
    assert "distributed" in _refused(tmp_path, "--data", "slurm=true")


def test_possible_combination_renders(tmp_path):
    dest = ptscaffold.new(
        tmp_path / "p", data={"slurm": "true", "distributed": "ddp"}, defaults=True, quiet=True
    )
    assert "slurm: true" in (dest / ".copier-answers.yml").read_text()


def test_template_validator_failure_is_one_line(tmp_path):
    message = _refused(tmp_path, "--data", "package_name=Not-An-Identifier")
    assert "package_name" in message


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"amp": "fp8"}, "choose one of"),
        ({"compile": "maybe"}, "true or false"),
        ({"nan_gaurd": "true"}, "nan_guard"),
    ],
)
def test_api_raises_answers_error(tmp_path, data, needle):
    with pytest.raises(AnswersError, match=needle):
        ptscaffold.new(tmp_path / "p", data=data, defaults=True, quiet=True)
    assert not (tmp_path / "p").exists()
