"""results.jsonl as units: a model type counts only whole; a torn tail is read around and repaired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.core.results import (
    FORMAT_VERSION,
    TORN_SUFFIX,
    ResultsFileError,
    read_run,
    repair,
)
from auditor.core.writing import ResultsWriter
from tests.report.helpers import result, run_info

FIXTURE_V1 = Path(__file__).resolve().parents[1] / "fixtures" / "sample-small.jsonl"


def _write(path: Path) -> None:
    with ResultsWriter(path, run_info()) as writer:
        writer.write_type("bert", [result("bert", "build"), result("bert", "refused", check="decorate", policy="legacy")])
        writer.write_type("mistral", [result("mistral", "build"), result("mistral", "build", check="decorate",
                                                                          policy="legacy")])


def test_each_model_type_ends_with_its_completion_record(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path)
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds == ["header", "result", "result", "done", "result", "result", "done"]
    run = read_run(path)
    assert run.format_version == FORMAT_VERSION and run.damage is None
    assert run.done_model_types == {"bert", "mistral"} and len(run.results) == 4


def test_a_type_cut_inside_its_rows_is_not_done_and_its_rows_are_left_out(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:5]) + lines[5][:20])  # mistral: one whole row, one cut, no record
    run = read_run(path)
    assert run.done_model_types == {"bert"}
    assert run.damage.torn_at == 6 and run.damage.incomplete == (("mistral", 1),)
    assert run.damage.note() == "line 6 and the unfinished rows of mistral (1 row)"


def test_repair_keeps_what_it_takes_out_and_leaves_a_whole_file(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path)
    whole = path.read_text().splitlines(keepends=True)
    path.write_text("".join(whole[:5]) + whole[5][:20])
    damage = repair(path)
    assert damage is not None and repair(path) is None  # once repaired, nothing more to do
    assert path.read_text() == "".join(whole[:4])
    torn = (tmp_path / f"results.jsonl{TORN_SUFFIX}").read_text()
    assert whole[4] in torn and whole[5][:20] in torn and torn.startswith("# ")
    with ResultsWriter(path, run_info(), append=True) as writer:  # appending after a repair is clean
        writer.write_type("mistral", [result("mistral", "build")])
    assert read_run(path).done_model_types == {"bert", "mistral"}


def test_version_1_files_are_read_with_every_row():
    run = read_run(FIXTURE_V1)
    assert run.format_version == 1 and run.damage is None and run.results


def test_a_broken_line_in_the_middle_is_still_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    path.write_text("".join(lines))
    with pytest.raises(ResultsFileError, match=":3: not JSON"):
        read_run(path)


def test_a_tail_overwritten_with_garbage_is_a_torn_tail_read_around_and_repaired(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5]) + b"\x00\x17{garbage\n\xff\xfe\rmore\n[1, 2]\n\n")  # mistral's rows
    run = read_run(path)
    assert run.done_model_types == {"bert"}
    assert (run.damage.torn_at, run.damage.torn_lines) == (6, 5)  # \r ends a line too
    assert run.damage.note() == "lines 6-10 and the unfinished rows of mistral (1 row)"
    assert repair(path) is not None and path.read_bytes() == b"".join(lines[:4])
    assert b"{garbage" in (tmp_path / f"results.jsonl{TORN_SUFFIX}").read_bytes()


def test_garbage_with_a_record_after_it_is_damage_inside_the_file(tmp_path):
    path = tmp_path / "results.jsonl"
    _write(path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + "garbage\n" + "".join(lines[4:]))  # bert's completion record
    with pytest.raises(ResultsFileError, match=":4: not JSON"):
        read_run(path)
