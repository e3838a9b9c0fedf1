"""What a run found, per column: the end-of-run lines of `auditor sweep` and the head of report.html."""

from __future__ import annotations

import shutil
from dataclasses import replace

from auditor.cli import main
from auditor.core.results import read_run
from auditor.report.matrix import build_matrix
from auditor.report.page import render_report
from auditor.report.summary import findings
from tests.report.helpers import result, write_run


def _run(tmp_path):
    rows = [result("bert", "build"), result("gpt2", "build"), result("t5gemma2", "build"), result("zamba", "error"),
            result("bert", "build", check="decorate", component="decoder", policy="legacy"),
            result("gpt2", "build", check="decorate", component="decoder", policy="legacy"),
            result("t5gemma2", "refused", check="decorate", component="decoder", policy="legacy"),
            result("zamba", "error", check="decorate", component="decoder", policy="legacy")]
    rows += [replace(result(m, "error", check="pickle", component="by-ref-remote"), extras={"expected": True})
             for m in ("bert", "gpt2", "t5gemma2")]
    rows.append(result("zamba", "skipped", check="pickle", component="by-ref-remote"))
    return read_run(write_run(tmp_path / "run", rows))


def test_each_column_says_its_passes_its_failures_and_what_fails_by_design(tmp_path):
    lines = [f.text() for f in findings(build_matrix([_run(tmp_path)]))]
    assert lines == [
        "build: 3/4 pass · error 1 (zamba)",
        "decorate/decoder/legacy: 2/4 pass · refused 1 (t5gemma2) · error 1 (zamba)",
        "pickle/by-ref-remote: 0/4 pass · skipped 1 (zamba) · 3 failing as expected by design",
    ]


def test_many_failing_types_are_counted_not_named(tmp_path):
    run = read_run(write_run(tmp_path / "many", [result(f"m{i}", "error") for i in range(5)]))
    assert findings(build_matrix([run]))[0].text() == "build: 0/5 pass · error 5"


def test_the_same_lines_head_the_html_report(tmp_path):
    run = _run(tmp_path)
    page = render_report([run])
    head = page.split('id="findings"', 1)[1].split("</ul>", 1)[0]
    for finding in findings(build_matrix([run])):
        assert finding.text().replace("&", "&amp;") in head
    assert page.index('id="findings"') < page.index('id="matrix-section"')


def test_reports_read_a_cut_file_with_a_note(tmp_path, capsys):
    run_dir = tmp_path / "cut"
    shutil.copytree(_run(tmp_path).path.parent, run_dir)
    data = (run_dir / "results.jsonl").read_bytes()
    (run_dir / "results.jsonl").write_bytes(data[:-30])  # inside the last type's completion record
    assert main(["report", str(run_dir)]) == 0
    err = capsys.readouterr().err
    assert "was cut short" in err and "zamba" in err


def test_the_summary_table_and_the_failures_label_what_fails_by_design(tmp_path):
    from auditor.report.summary import column_summaries, failure_groups

    matrix = build_matrix([_run(tmp_path)])
    by_column = {s.column: s.expected for s in column_summaries(matrix)}
    assert by_column == {"build": 0, "decorate/decoder/legacy": 0, "pickle/by-ref-remote": 3}
    groups = failure_groups(matrix)
    assert sum(g.expected for g in groups) == 3  # the three by-ref-remote cells, whatever their grouping
    assert all(g.expected == 0 for g in groups if "pickle/by-ref-remote" not in g.columns)
    page = render_report([_run(tmp_path / "again")])
    assert "(3 failing as expected by design)" in page and ">expected by design<" in page
