"""Golden tests of results.csv and matrix.csv.

The expected files under tests/fixtures/report/expected/ change only deliberately: after a change
to the tables, rerun with AUDITOR_REGENERATE_GOLDEN=1 and review the diff in git.
"""

from __future__ import annotations

import os

import pytest

from auditor.core.results import read_run
from auditor.report.files import report_texts
from auditor.report.tables import LONG_COLUMNS, csv_text, long_frame, matrix_frame
from tests.report.helpers import FIXTURES, write_run

CASES = {
    "small": ["small.jsonl"],
    "two-environments": ["py311.jsonl", "py312.jsonl"],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", ["results.csv", "matrix.csv"])
def test_csv_matches_golden(case, name):
    runs = [read_run(FIXTURES / f) for f in CASES[case]]
    actual = report_texts(runs)[name]
    expected_path = FIXTURES / "expected" / case / name
    if os.environ.get("AUDITOR_REGENERATE_GOLDEN"):
        expected_path.parent.mkdir(parents=True, exist_ok=True)
        expected_path.write_text(actual, encoding="utf-8", newline="")
        pytest.skip(f"regenerated {expected_path}")
    assert actual == expected_path.read_text(encoding="utf-8")


def test_long_table_has_one_row_per_result_and_stable_columns():
    runs = [read_run(FIXTURES / "py311.jsonl"), read_run(FIXTURES / "py312.jsonl")]
    frame = long_frame(runs)
    assert list(frame.columns) == LONG_COLUMNS
    assert len(frame) == sum(len(r.results) for r in runs)
    assert frame["environment"].nunique() == 2


def test_matrix_has_one_column_group_per_environment():
    runs = [read_run(FIXTURES / "py311.jsonl"), read_run(FIXTURES / "py312.jsonl")]
    frame = matrix_frame(runs)
    assert frame.columns[0] == "model_type"
    assert frame.columns[1] == "py3.11 tf5.24.0 torch2.13.0+cpu | build"
    assert "py3.12 tf5.25.0 torch2.13.0+cpu | pickle/vision_config" in frame.columns
    zamba = frame.set_index("model_type").loc["zamba"]
    assert zamba["py3.11 tf5.24.0 torch2.13.0+cpu | build"] == ""  # not in the older transformers


def test_csv_text_uses_newlines_and_reads_back():
    frame = matrix_frame([read_run(FIXTURES / "small.jsonl")])
    text = csv_text(frame)
    assert "\r" not in text
    assert text.splitlines()[0] == "model_type,build"


def test_empty_run_gives_empty_tables(tmp_path):
    run = read_run(write_run(tmp_path / "empty", []))
    assert long_frame([run]).empty
    assert list(matrix_frame([run]).columns) == ["model_type"]
