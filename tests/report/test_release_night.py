"""The night a release lands (issue 39), two real nights in one reports folder.

Night one is a real sweep under transformers 5.24.0, committed (tests/fixtures/nights/5.24.0: made
with `auditor sweep --models llama,qwen2,falcon,deepseek_v3,ergo --allow-absent --checks
build,backend` in upgrade-check's 5.24.0 side venv; ergo is not in 5.24.0). One venv holds one
transformers, and this one's is 5.25.0: night two is swept here, for real, after a one-off run of
another selection in the same folder. Night two's terminal, summary.md and report.html must open
the since-section with the release change, compare with night one (not the one-off), list ergo
among the new types, show each engine's changed types with fault and repro command, and give the
same counts as each other, as `auditor diff` and as the one change model (auditor.report.changes).
"""

from __future__ import annotations

import html
import shutil

import pytest
import transformers

from auditor.core.results import read_run
from auditor.report.changes import changes
from tests.conftest import ROOT, run_auditor

NIGHT_ONE = ROOT / "tests" / "fixtures" / "nights" / "5.24.0"
SELECTION = "llama,qwen2,falcon,deepseek_v3,ergo"

pytestmark = pytest.mark.skipif(transformers.__version__ != "5.25.0",
                                reason="night two is transformers 5.25.0 (constraints/test.txt)")


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    shutil.copytree(NIGHT_ONE, reports / "night-1")
    oneoff = run_auditor("sweep", "--reports", str(reports), "--run-id", "oneoff", "--models", "modernbert",
                         "--checks", "build")
    assert oneoff.returncode == 0, oneoff.stderr
    night = run_auditor("sweep", "--reports", str(reports), "--run-id", "night-2", "--models", SELECTION,
                        "--checks", "build,backend", "--jobs", "2")
    assert night.returncode in (0, 1), night.stderr
    diff = run_auditor("diff", str(reports / "night-1"), str(reports / "night-2"), "-o", str(reports / "diff"))
    found = changes(read_run(reports / "night-1" / "results.jsonl"), read_run(reports / "night-2" / "results.jsonl"))
    return reports, night.stdout + night.stderr, diff, found


def test_night_two_compares_with_night_one_across_the_release(nights):
    reports, terminal, _, found = nights
    assert found.against == "night-1" and found.environment[0] == "transformers 5.24.0 -> 5.25.0"
    headline = found.headline()
    assert headline.startswith("Since night-1: transformers 5.24.0 -> 5.25.0")
    summary = (reports / "night-2" / "summary.md").read_text()
    page = html.unescape((reports / "night-2" / "report.html").read_text())
    since = page.split('<section id="since">')[1].split("</section>")[0]
    assert headline in terminal
    assert "#### " + headline.replace(">", "\\>").replace("_", "\\_") in summary
    assert "<h2>Since night-1</h2>" in since and "transformers 5.24.0 -> 5.25.0" in since
    assert "oneoff" not in headline  # another selection in the same folder is passed over


def test_ergo_is_a_new_type_of_every_engine(nights):
    reports, terminal, diff, found = nights
    assert "ergo" in found.new_types
    for engine in found.engines:
        assert "ergo" in engine.new_types, engine.name
    assert "new types: ergo" in terminal and "new types: ergo" in diff.stdout
    assert "ergo" in (reports / "diff" / "diff.md").read_text().split("## What changed, per engine")[1]


def test_each_engine_says_its_changed_types_with_fault_and_repro(nights):
    reports, terminal, diff, found = nights
    changed = [(engine, change) for engine in found.engines for change in engine.type_changes]
    assert changed, "5.24.0 -> 5.25.0 changes a verdict of these types (falcon, deepseek_v3)"
    summary = (reports / "night-2" / "summary.md").read_text()
    page = html.unescape((reports / "night-2" / "report.html").read_text())
    diff_md = (reports / "diff" / "diff.md").read_text()
    for engine, change in changed:
        assert change.fault and change.repro.startswith(f"auditor sweep --models {change.model_type} ")
        for output in (terminal, diff.stdout):
            assert f"{change.model_type} {change.why} (fault: {change.fault})" in output
            assert f"again: {change.repro}" in output
        assert f"`{change.repro}`" in summary and f'<code class="repro">{change.repro}</code>' in page
        assert f"| {engine.label} | {change.model_type} |" in diff_md and f"`{change.repro}`" in diff_md


def test_the_counts_agree_across_every_output(nights):
    reports, terminal, diff, found = nights
    summary = (reports / "night-2" / "summary.md").read_text()
    page = html.unescape((reports / "night-2" / "report.html").read_text())
    diff_md = (reports / "diff" / "diff.md").read_text()
    diff_html = html.unescape((reports / "diff" / "diff.html").read_text())
    for engine in found.engines:  # a line per engine, the unchanged ones too
        for output in (terminal, summary, page, diff.stdout, diff_md, diff_html):
            assert engine.line in output, (engine.line, output[:300])
    assert found.cells_line() in terminal and found.cells_line() in diff.stdout
    lost = [e for e in found.engines if e.lost]
    assert diff.returncode == (1 if lost or found.new_findings else 0), diff.stdout
