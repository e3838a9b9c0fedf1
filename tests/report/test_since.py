"""Since the last run: `auditor report` says what changed against the run before it."""

from __future__ import annotations

from dataclasses import replace

from auditor.cli import main
from tests.report.helpers import result, write_run


def _reports(tmp_path):
    reports = tmp_path / "reports"
    write_run(reports / "20261201-020000", [result("llama", "build"), result("gpt2", "error", signature="E: x"),
                                            result("bert", "build")])
    flaky = result("bert", "timeout", signature="timeout")
    write_run(reports / "20261202-020000", [result("llama", "refused", signature="TypeError: no"),
                                            result("gpt2", "build"), flaky,
                                            replace(result("bert", "build"), extras={"rerun": 1})])
    return reports


def test_the_report_says_what_changed_since_the_run_before_it_in_its_folder(tmp_path):
    reports = _reports(tmp_path)
    assert main(["report", str(reports / "20261202-020000")]) == 0
    summary = (reports / "20261202-020000" / "summary.md").read_text()
    assert "#### Since 20261201-020000: 1 new finding, 1 fixed, 1 flaky" in summary
    assert "- new: llama build (build → refused)" in summary and "- fixed: gpt2 build (error → build)" in summary
    page = (reports / "20261202-020000" / "report.html").read_text()
    since = page.split('<section id="since">')[1].split("</section>")[0]
    assert '<tr data-change="new" data-type="llama">' in since and '<tr data-change="fixed" data-type="gpt2">' in since
    assert '<tr data-change="flaky" data-type="bert">' in since
    assert page.index('<section id="since">') < page.index('<section id="matrix-section">')


def test_the_first_run_and_against_name_what_to_compare_with(tmp_path):
    reports = _reports(tmp_path)
    assert main(["report", str(reports / "20261201-020000")]) == 0  # nothing before it
    assert "Since" not in (reports / "20261201-020000" / "summary.md").read_text()
    out = tmp_path / "out"
    assert main(["report", str(reports / "20261201-020000"), "-o", str(out),
                 "--against", str(reports / "20261202-020000")]) == 0
    assert "#### Since 20261202-020000: 1 new finding, 1 fixed, 0 flaky" in (out / "summary.md").read_text()
