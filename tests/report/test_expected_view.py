"""`--expected` relabels the reports people read, never the data: report.html, summary.md and a
sweep's end summary show a failure the expected baseline lists as `expected`, its own status
still visible, and the JUnit XML skips it as expected; results.csv, matrix.csv and serve.csv are
the rows as they are.

On the session's real sweeps of tests/plugins/flaky_models.py (`flaky_sweeps`, tests/conftest.py):
the second night fails auditor_flaky_always only, so `auditor baseline` of it lists that cell; the
third night fails it and auditor_flaky_flip (oom both), and was swept with `--expected`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.core.outcome import Outcome
from auditor.report.files import REPORT_FILES
from auditor.report.matrix import Cell
from tests.conftest import FLAKY_BASELINE, NIGHTS
from tests.report.helpers import page_cells, result

FLIP, ALWAYS, FINE = "auditor_flaky_flip", "auditor_flaky_always", "auditor_flaky_fine"
RAW = ("results.csv", "matrix.csv", "serve.csv")


@pytest.fixture(scope="module")
def reports(flaky_sweeps, tmp_path_factory) -> dict[str, Path]:
    """The third night's reports, rendered by `auditor report`: "with" the baseline `auditor
    baseline` wrote of the second night, "without" one, and with an "empty" baseline (its header)."""
    _, second, third = (flaky_sweeps[night][0] for night in NIGHTS)
    tmp = tmp_path_factory.mktemp("expected-view")
    baseline, empty = tmp / "expected.csv", tmp / "empty.csv"
    assert main(["baseline", str(second), "-o", str(baseline)]) == 0
    empty.write_text(baseline.read_text().splitlines()[0] + "\n")
    out = {"baseline": baseline}
    for name, extra in (("with", ["--expected", str(baseline)]), ("without", []), ("empty", ["--expected", str(empty)])):
        out[name] = tmp / name
        assert main(["report", str(third), "-o", str(out[name]), "--junit", str(out[name] / "junit.xml"), *extra]) == 0
    return out


def matrix_cell(html: str, model_type: str) -> dict:
    """A model type's only cell (build) in report.html's matrix, as its script shows it."""
    return page_cells(html)[(model_type, "build")]


def test_the_listed_failure_is_expected_in_the_matrix_with_its_own_status_in_the_title(reports):
    html = (reports["with"] / "report.html").read_text()
    cell = matrix_cell(html, ALWAYS)
    assert (cell["s"], cell["was"], cell["text"]) == ("expected", "oom", "expected")
    assert cell["title"].startswith(f'expected (baseline {reports["baseline"]}): oom · MemoryError')
    assert matrix_cell(html, FLIP)["s"] == "oom" and not matrix_cell(html, FLIP)["was"]
    assert '<input type="checkbox" class="status-filter" value="expected" checked>' in html  # the legend
    assert re.search(r"#matrix td\.k\d+ \{ background: #aab3bf;", html)  # its own colour
    without = (reports["without"] / "report.html").read_text()
    assert matrix_cell(without, ALWAYS)["s"] == "oom" and 'value="expected"' not in without


def test_the_failures_table_lists_findings_and_counts_the_expected_cell_apart(reports):
    html = (reports["with"] / "report.html").read_text()
    failures = html.split('<section id="failures">')[1].split("</section>")[0]
    table, apart = failures.split('id="apart"')
    assert FLIP in table and ALWAYS not in table
    assert re.search(rf'<tr data-outcome="expected" data-baseline="{re.escape(str(reports["baseline"]))}">'
                     rf'<td class="num">1</td><td>expected \(baseline [^<]+\)</td>', apart)
    summary = html.split('<section id="summary">')[1].split("</section>")[0]
    assert f"build: 1/3 pass · oom 1 ({FLIP}) · 1 expected (baseline {reports['baseline']})" in summary
    assert 'data-status="expected" data-count="1"' in summary and 'data-status="oom" data-count="1"' in summary
    without = (reports["without"] / "report.html").read_text().split('<section id="failures">')[1]
    assert ALWAYS in without.split("</section>")[0] and 'id="apart"' not in without  # a finding there


def test_summary_md_counts_the_expected_cell_apart(reports):
    text = (reports["with"] / "summary.md").read_text()
    assert f"3 cells ran: 1 finding, 1 expected, 1 pass** (of them, 1 expected (baseline {reports['baseline']}))" \
        in text.replace("\\_", "_")
    assert "1 oom (expected: baseline)" in text and "2 oom" not in text
    failures = text.split("most common findings")[1].split("Not findings")[0]
    assert FLIP.replace("_", "\\_") in failures and ALWAYS.replace("_", "\\_") not in failures
    assert "3 cells ran: 2 findings, 1 pass**\n" in (reports["without"] / "summary.md").read_text()


def test_the_tables_are_the_rows_and_an_empty_baseline_changes_no_report(reports):
    for name in RAW:
        assert (reports["with"] / name).read_bytes() == (reports["without"] / name).read_bytes(), name
    assert "expected" not in (reports["with"] / "results.csv").read_text()
    for name in (*REPORT_FILES, "junit.xml"):
        assert (reports["empty"] / name).read_bytes() == (reports["without"] / name).read_bytes(), name
    assert (reports["with"] / "report.html").read_bytes() != (reports["without"] / "report.html").read_bytes()


def test_junit_skips_the_expected_cell_and_still_fails_the_finding(reports):
    cases = ET.parse(reports["with"] / "junit.xml").getroot().iter("testcase")
    children = {case.get("classname"): [(c.tag, c.get("message", "")) for c in case] for case in cases}
    assert children[FINE] == [] and [tag for tag, _ in children[FLIP]] == ["failure"]
    [(tag, message)] = children[ALWAYS]
    assert tag == "skipped" and message.startswith(f"expected (baseline {reports['baseline']}): oom: MemoryError")
    without = ET.parse(reports["without"] / "junit.xml").getroot()
    assert [c.tag for case in without.iter("testcase") if case.get("classname") == ALWAYS for c in case] == ["failure"]


def test_a_sweep_with_expected_says_so_in_its_end_summary_and_reports(flaky_sweeps):
    third, proc = flaky_sweeps[list(NIGHTS)[-1]]
    assert proc.returncode == 1, proc.stderr  # --fail-on oom: auditor_flaky_flip is not listed
    gate = next(line for line in proc.stderr.splitlines() if "--fail-on" in line)
    assert FLIP in gate and ALWAYS not in gate
    assert f"  build: 1/3 pass · oom 1 ({FLIP}) · 1 expected (baseline {FLAKY_BASELINE})" in proc.stderr
    assert matrix_cell((third / "report.html").read_text(), ALWAYS)["s"] == "expected"
    assert "1 expected (baseline" in (third / "summary.md").read_text()
    assert "expected" not in (third / "matrix.csv").read_text()


def test_the_expected_legend_entry_filters_and_colours_in_chromium(reports, page):
    page.goto((reports["with"] / "report.html").as_uri())
    cell = page.locator(f'tr[data-model="{ALWAYS}"] td')
    swatch = page.locator('.legend-item:has(input[value="expected"]) i.swatch')
    colour = swatch.evaluate("s => getComputedStyle(s).backgroundColor")
    assert cell.evaluate("c => getComputedStyle(c).backgroundColor") == colour == "rgb(170, 179, 191)"
    oom = page.locator(f'tr[data-model="{FLIP}"] td').evaluate("c => getComputedStyle(c).backgroundColor")
    assert oom != colour
    cell.click()
    assert page.inner_text("#d-status") == "expected" and "oom" in page.inner_text("#d-sig")
    page.uncheck('input.status-filter[value="expected"]')
    shown = page.eval_on_selector_all("#matrix tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.model)")
    assert ALWAYS not in shown and FLIP in shown


def test_only_a_finding_the_baseline_lists_is_relabelled():
    """Written rows, not a sweep: the rule's order is what is tested. A failure by design or a
    flaky one that a baseline also lists stays what it was, under its own status."""
    by_design, finding, unlisted = (result("t", "error", signature="E") for _ in range(3))
    by_design.extras["expected"] = True
    rerun = result("t", "build")
    rerun.extras["rerun"] = 1
    cells = {"by design": Cell((by_design,), listed=True), "finding": Cell((finding,), listed=True),
             "flaky": Cell((result("t", "oom"), rerun), listed=True), "not listed": Cell((unlisted,))}
    assert {name: (c.outcome, c.by_baseline, str(c.shown)) for name, c in cells.items()} == {
        "by design": (Outcome.EXPECTED, False, "error"), "finding": (Outcome.EXPECTED, True, "expected"),
        "flaky": (Outcome.FLAKY, False, "oom"), "not listed": (Outcome.FINDING, False, "error")}
