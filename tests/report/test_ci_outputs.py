"""What CI systems read: the JUnit XML, the Markdown summary and `--fail-on`, on a real sweep of
real model types and the misbehaving plugin types, and on crafted runs for the hostile and the
huge cases.

The JUnit files are parsed with junitparser (a well-kept parser from the registry) and validated
with xmlschema against tests/fixtures/junit/junit.xsd, the structure CI reporters accept.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest
import xmlschema

from auditor.core.outcome import Tally, judge
from auditor.core.results import read_run
from auditor.report.diff import diff_runs
from auditor.report.junit import TEXT_LIMIT, render_diff_junit, render_junit
from auditor.report.markdown import render_summary
from auditor.report.matrix import build_matrix
from auditor.report.statuses import is_ok
from tests.conftest import TROUBLEMAKERS, run_auditor
from tests.report.helpers import result, write_run

SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parents[1] / "fixtures" / "junit" / "junit.xsd")
# t5gemma2: the legacy decorator refuses it (a real refusal); auditor_exit kills its worker
# (crash), auditor_missing raises ImportError, auditor_bad_config has no default config.
TYPES = "llama,gpt2,t5gemma2,auditor_fine,auditor_exit,auditor_missing,auditor_bad_config"
GITHUB_LIMIT = 65_536


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One real sweep that writes every CI output and gates on the legacy refusal."""
    out = tmp_path_factory.mktemp("ci") / "run"
    proc = run_auditor("sweep", "--plugin", TROUBLEMAKERS, "--reruns", "0", "--models", TYPES, "--checks", "build,decorate",
                       "--jobs", "2", "--timeout", "120", "-o", str(out), "--junit", str(out / "junit.xml"),
                       "--markdown", str(out / "step-summary.md"), "--fail-on", "decorate/*/legacy=refused")
    return out, proc


def _parsed(path: Path) -> junitparser.JUnitXml:
    SCHEMA.validate(str(path))
    xml = junitparser.JUnitXml.fromfile(str(path))
    return xml if isinstance(xml, junitparser.JUnitXml) else junitparser.JUnitXml().add_testsuite(xml)


def test_the_sweep_exits_1_on_a_matching_cell_and_names_it(swept):
    out, proc = swept
    assert proc.returncode == 1, proc.stderr
    assert "t5gemma2 decorate/decoder/legacy (refused)" in proc.stderr
    assert (out / "summary.md").is_file() and (out / "report.html").is_file()


def test_every_output_counts_the_findings_the_outcome_rule_counts(swept, tmp_path):
    """The end of the sweep, summary.md, the step summary, report.html (swept and re-rendered),
    JUnit and `auditor gate` all say the one number of findings: the cells of results.jsonl whose
    claims the cell rule (auditor.core.outcome.judge) calls a finding."""
    out, proc = swept
    claims: dict = {}
    for row in read_run(out / "results.jsonl").results:
        claims.setdefault((row.model_type, row.column), []).append(row)
    expected = Tally.of(judge(rows).outcome for rows in claims.values())
    assert expected.findings and expected.passed
    said = expected.text()
    gate = run_auditor("gate", str(out), "--markdown", str(tmp_path / "gate.md"))
    report = run_auditor("report", str(out), "-o", str(tmp_path / "again"), "--junit", str(tmp_path / "again.xml"))
    assert report.returncode == 0, report.stderr
    assert said in proc.stderr.splitlines()
    for text in ((out / "summary.md").read_text(), (out / "step-summary.md").read_text(),
                 (tmp_path / "again" / "summary.md").read_text()):
        assert f"**{said}**" in text
    for page in ((out / "report.html").read_text(), (tmp_path / "again" / "report.html").read_text()):
        assert f'<p class="tally" id="tally"><b>{said}</b></p>' in page
    for junit in (out / "junit.xml", tmp_path / "again.xml"):
        xml = _parsed(junit)
        assert xml.failures == expected.findings and xml.tests - xml.skipped - xml.failures == expected.passed
    assert gate.returncode == 1 and f"{expected.findings} new failures" in gate.stderr  # no baseline: every finding
    assert f"Tonight: {said}" in (tmp_path / "gate.md").read_text()


def test_junit_counts_equal_the_matrix(swept):
    out, _ = swept
    cells = build_matrix([read_run(out)]).cells()
    xml = _parsed(out / "junit.xml")
    cases = [(case.classname, case.name, case) for suite in xml for case in suite]
    assert len(cases) == len(cells) == xml.tests
    failing = {(m, c.column) for m, c, cell in cells if not is_ok(cell.status) and cell.status != "skipped"
               and not cell.expected}
    failed = {(cls, name) for cls, name, case in cases
              if any(isinstance(r, junitparser.Failure) for r in case.result)}
    assert failed == failing and xml.failures == len(failing)
    crash = next(case for cls, name, case in cases if cls == "auditor_exit" and name == "build")
    assert crash.result[0].type == "crash"
    refusal = next(case for cls, name, case in cases if cls == "t5gemma2" and name == "decorate/decoder/legacy")
    assert refusal.result[0].type == "refused" and "TypeError" in refusal.result[0].text


def test_fail_on_matches_exactly_when_a_cell_exists(swept):
    out, _ = swept
    statuses = {cell.status for _, _, cell in build_matrix([read_run(out)]).cells()}
    assert {"crash", "refused", "missing-dependency", "config-error"} <= statuses and "oom" not in statuses
    assert run_auditor("report", str(out), "--fail-on", "oom").returncode == 0
    assert run_auditor("report", str(out), "--fail-on", "decorate/*/fixed=refused").returncode == 0
    assert run_auditor("report", str(out), "--fail-on", "oom,crash").returncode == 1
    hit = run_auditor("report", str(out), "--fail-on", "build=missing-dependency")
    assert hit.returncode == 1 and "auditor_missing build (missing-dependency)" in hit.stderr


def test_a_bad_fail_on_is_refused_before_any_work(tmp_path):
    proc = run_auditor("sweep", "--models", "llama", "-o", str(tmp_path / "run"), "--fail-on", "refused,brokn")
    assert proc.returncode == 2
    assert "'brokn' is not a status" in proc.stderr and not (tmp_path / "run" / "results.jsonl").exists()
    assert run_auditor("report", str(tmp_path), "--fail-on", "build").returncode == 2  # a pass is no gate


def test_the_markdown_summary_is_the_policy_table(swept):
    out, _ = swept
    text = (out / "step-summary.md").read_text()
    assert text == (out / "summary.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| probe |"))
    assert header == "| probe | legacy | fixed | fixed-no-config-skip |"
    decoder = next(line for line in text.splitlines() if line.startswith("| decorate/decoder |"))
    legacy = decoder.split(" | ")[1]
    assert re.search(r"\d+ build", legacy) and "1 refused (t5gemma2)" in legacy
    assert "<details>" in text and len(text) < GITHUB_LIMIT


def test_report_prints_the_markdown_for_the_step_summary(swept):
    out, _ = swept
    proc = run_auditor("report", str(out), "-o", str(out.parent / "again"), "--markdown", "-",
                       "--junit", str(out.parent / "again.xml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("### auditor:", 1)[1] == (out / "summary.md").read_text().split("### auditor:", 1)[1]
    assert _parsed(out.parent / "again.xml").tests == _parsed(out / "junit.xml").tests


HOSTILE = ("</failure><script>alert(1)</script> | **bold** `tick` [link](http://x) & \x00\x07\x1b[31m\n# heading\n"
           + "Traceback line\n" * 7000)  # about 100 KB


def test_a_hostile_message_stays_escaped_and_bounded(tmp_path):
    hostile_type = "evil<b>|type"
    run = read_run(write_run(tmp_path / "run", [
        result("llama", "build"),
        result(hostile_type, "error", signature="RuntimeError: <script>|x", message=HOSTILE),
        result(hostile_type, "refused", check="decorate", component="decoder", policy="legacy",
               signature="TypeError: \x1b]8;;evil", message=HOSTILE),
    ]))
    assert len(HOSTILE) > 100_000
    xml_text = render_junit([run])
    path = tmp_path / "junit.xml"
    path.write_text(xml_text, encoding="utf-8")
    xml = _parsed(path)  # well-formed and valid despite NUL and ESC in the message
    failures = [r for suite in xml for case in suite for r in case.result]
    assert len(failures) == 2
    for failure in failures:
        assert "\x00" not in failure.text and "\\x00" in failure.text
        assert len(failure.text) <= TEXT_LIMIT + 100 and "more characters cut" in failure.text
    assert ET.fromstring(xml_text).find(".//script") is None
    markdown = render_summary([run])
    assert "<script>" not in markdown and "<b>" not in markdown and "\x00" not in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| decorate/decoder |"))
    assert row.count(" | ") == 1 and "1 refused (evil\\<b\\>\\|type)" in row
    assert len(markdown) < 10_000


def test_the_summary_stays_under_the_limit_on_a_huge_run(tmp_path):
    """1,000 model types and 50 columns, every failing kind, long names and signatures."""
    statuses = ["build", "refused", "error", "decorate-error", "missing-dependency", "crash", "timeout", "skipped"]
    rows = []
    for i in range(1000):
        name = f"model_type_with_a_rather_long_name_{i:04d}"
        for j in range(50):
            status = statuses[(i * 7 + j) % len(statuses)]
            policy = ("legacy", "fixed", "fixed-no-config-skip", "vllm", "external:x:y")[j % 5]
            rows.append(result(name, status, check="decorate", component=f"encoder:probe{j // 5}", policy=policy,
                               signature=f"Error{i % 97}: something long went wrong " * 4))
    run = read_run(write_run(tmp_path / "run", rows))
    text = render_summary([run])
    assert len(text) < GITHUB_LIMIT and len(text.encode("utf-8")) < GITHUB_LIMIT
    assert text.count("\n") < 200  # read, not searched
    assert text.count("| decorate/encoder:probe") == 10
    assert "more not shown" in text and text.rstrip().endswith("</details>")


def test_diff_junit_fails_the_regressions_only(tmp_path):
    base = write_run(tmp_path / "base", [result("llama", "build"), result("gpt2", "error", signature="E: x"),
                                         result("bert", "build")])
    new = write_run(tmp_path / "new", [result("llama", "refused", signature="TypeError: no"),
                                       result("gpt2", "build"), result("bert", "build")])
    junit = tmp_path / "diff.xml"
    proc = run_auditor("diff", str(base), str(new), "--junit", str(junit))
    assert proc.returncode == 1, proc.stderr
    xml = _parsed(junit)
    cases = {case.classname: case for suite in xml for case in suite}
    assert xml.tests == 2 and xml.failures == 1
    assert isinstance(cases["llama"].result[0], junitparser.Failure)
    assert cases["gpt2"].result == [] and "fixed: error -> build" in cases["gpt2"].system_out
    expected = render_diff_junit(diff_runs(read_run(base), read_run(new)))
    assert junit.read_text() == expected


def test_the_schema_rejects_what_reporters_reject(tmp_path):
    """The validation can fail: a testcase without a name, or with two outcomes, is refused."""
    for bad in ('<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>',
                '<testsuites><testsuite name="s" tests="1" failures="2" errors="0"><testcase name="c">'
                '<failure/><failure/></testcase></testsuite></testsuites>'):
        assert not SCHEMA.is_valid(bad)
