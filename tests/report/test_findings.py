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
        "pickle/by-ref-remote: 0/3 pass · 3 failing as expected by design · 1 skipped",  # skipped: not ran
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
    assert "stopped the reading (cut short" in err and "the unfinished rows of zamba" in err


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


def _section(page: str, section: str) -> str:
    return page.split(f'<section id="{section}">', 1)[1].split("</section>", 1)[0]


def test_the_most_common_failures_are_findings_and_skips_are_counted_apart(tmp_path):
    """A backend sweep skips every gate after the one that stopped vLLM: those cells tested
    nothing, so the failures table leaves them out and a line counts them apart."""
    rows = [result(m, "unsupported", check="backend", component="registry", message="no backend class")
            for m in ("bert", "gpt2")]
    rows += [result(m, "skipped", check="backend", component=gate,
                    message="not reached: vLLM stops at backend/registry")
             for m in ("bert", "gpt2") for gate in ("build", "enable-if", "attention")]
    rows += [replace(result("bert", "error", check="pickle", component="by-ref-remote",
                            message="ImportError: No module named 'transformers_modules'"), extras={"expected": True})]
    failures = _section(render_report([read_run(write_run(tmp_path / "run", rows))]), "failures")
    listed = failures.split('id="apart"', 1)[0]
    assert "no backend class" in listed and 'data-status="unsupported"' in listed
    assert "not reached" not in listed and 'data-status="skipped"' not in listed
    assert "transformers_modules" not in listed
    apart = failures.split('id="apart"', 1)[1]
    assert '<tr data-outcome="skipped"><td class="num">6</td><td>skipped</td>' in apart
    assert "not reached: vLLM stops at backend/registry" in apart
    assert '<tr data-outcome="expected"><td class="num">1</td><td>expected by design</td>' in apart


def test_a_run_without_skips_or_expected_failures_has_nothing_apart(tmp_path):
    run = read_run(write_run(tmp_path / "run", [result("bert", "build"), result("gpt2", "error")]))
    failures = _section(render_report([run]), "failures")
    assert "gpt2 error" in failures and 'id="apart"' not in failures
