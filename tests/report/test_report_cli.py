"""`auditor report` and `auditor report --history`: files written, defaults, and bad input."""

from __future__ import annotations

import re
import shutil

import pytest

from auditor.cli import main
from auditor.core.results import read_run
from auditor.report import write_report
from auditor.report.files import REPORT_FILES
from auditor.report.page import render_report
from auditor.report.templating import template_dirs
from tests.report.helpers import FIXTURES, result, write_run


def test_write_report_writes_the_three_files(tmp_path):
    paths = write_report([read_run(FIXTURES / "small.jsonl")], tmp_path / "out")
    assert [p.name for p in paths] == list(REPORT_FILES)
    assert all(p.stat().st_size > 0 for p in paths)
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_report_defaults_to_the_run_directory(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(FIXTURES / "small.jsonl", run_dir / "results.jsonl")
    assert main(["report", str(run_dir)]) == 0
    assert sorted(p.name for p in run_dir.iterdir()) == sorted([*REPORT_FILES, "results.jsonl"])
    assert str(run_dir / "report.html") in capsys.readouterr().out


def test_several_inputs_need_an_output_directory(tmp_path, capsys):
    inputs = [str(FIXTURES / "py311.jsonl"), str(FIXTURES / "py312.jsonl")]
    assert main(["report", *inputs]) == 2
    assert "--output" in capsys.readouterr().err
    assert main(["report", *inputs, "-o", str(tmp_path / "merged")]) == 0
    assert (tmp_path / "merged" / "matrix.csv").read_text() == (
        FIXTURES / "expected" / "two-environments" / "matrix.csv").read_text()


def test_report_exit_2_on_bad_input(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "auditor: error: cannot read" in capsys.readouterr().err
    assert main(["report"]) == 2
    assert main(["report", str(FIXTURES / "small.jsonl"), "--history", str(tmp_path)]) == 2


def test_report_html_is_self_contained_and_deterministic():
    runs = [read_run(FIXTURES / "py311.jsonl"), read_run(FIXTURES / "py312.jsonl")]
    html = render_report(runs)
    assert html == render_report(runs)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing from the network
    assert "<link" not in html and html.count("<script") == 2  # the data and our inline script


def test_report_html_escapes_third_party_text():
    html = render_report([read_run(FIXTURES / "xss.jsonl")])
    assert "<script>alert" not in html and "<img src=x" not in html and "<i>x</i>" not in html
    assert "&lt;script&gt;alert(N)&lt;/script&gt;" in html  # its cause in the failures table, escaped
    assert "\\u003c/script>\\u003cscript>alert(3)" in html  # the message, inside the JSON data


def test_templates_are_found_in_the_checkout():
    assert template_dirs() and (template_dirs()[0] / "report.html.j2").is_file()


def night(root, name, started, statuses):
    return write_run(root / name, [result(m, s) for m, s in statuses.items()], started=started)


def test_history_indexes_nights_newest_first_with_diffs(tmp_path, capsys):
    reports = tmp_path / "reports"
    night(reports, "2026-11-28", "2026-11-28T02:00:00+00:00", {"bert": "build", "gpt2": "build"})
    night(reports, "2026-11-29", "2026-11-29T02:00:00+00:00", {"bert": "build", "gpt2": "error", "t5": "build"})
    night(reports, "2026-11-30", "2026-11-30T02:00:00+00:00", {"bert": "build", "gpt2": "build", "t5": "build"})
    (reports / "broken").mkdir()
    (reports / "broken" / "results.jsonl").write_text('{"kind": "header", "format_version": 0}\n')
    (reports / "not-a-run").mkdir()

    assert main(["report", "--history", str(reports)]) == 0
    captured = capsys.readouterr()
    assert "skipping broken" in captured.err
    index = (reports / "index.html").read_text()
    assert re.findall(r'data-run="([^"]+)"', index) == ["2026-11-30", "2026-11-29", "2026-11-28"]
    assert 'href="2026-11-29/report.html"' in index and 'href="2026-11-29/diff.html"' in index
    assert 'href="2026-11-28/diff.html"' not in index
    assert "1 regression" in index and "1 fix" in index and "format version 0" in index
    assert "<svg" in index
    for name in ("2026-11-28", "2026-11-29", "2026-11-30"):
        assert (reports / name / "report.html").is_file()
    assert not (reports / "2026-11-28" / "diff.html").exists()
    assert "gpt2" in (reports / "2026-11-29" / "diff.md").read_text()
    assert "## Fixes (1)" in (reports / "2026-11-30" / "diff.md").read_text()


def test_history_keeps_an_existing_report(tmp_path):
    reports = tmp_path / "reports"
    run_dir = night(reports, "one", "2026-11-28T02:00:00+00:00", {"bert": "build"})
    (run_dir / "report.html").write_text("kept")
    assert main(["report", "--history", str(reports)]) == 0
    assert (run_dir / "report.html").read_text() == "kept"


@pytest.mark.parametrize("make", ["missing", "file"])
def test_history_needs_a_directory(tmp_path, make):
    target = tmp_path / "x"
    if make == "file":
        target.write_text("")
    assert main(["report", "--history", str(target)]) == 2
