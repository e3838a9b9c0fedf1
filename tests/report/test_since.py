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
    assert "#### Since 20261201-020000: the same releases; 1 new finding, 1 fixed, 1 flaky" in summary
    assert "- new: llama build (build → refused)" in summary and "- fixed: gpt2 build (error → build)" in summary
    page = (reports / "20261202-020000" / "report.html").read_text()
    since = page.split('<section id="since">')[1].split("</section>")[0]
    assert '<tr data-change="new" data-type="llama">' in since and '<tr data-change="fixed" data-type="gpt2">' in since
    assert '<tr data-change="flaky" data-type="bert">' in since
    assert '<code class="repro">auditor sweep --models llama --checks build</code>' in since
    assert page.index('<section id="since">') < page.index('<section id="matrix-section">')


def test_the_first_run_and_against_name_what_to_compare_with(tmp_path):
    reports = _reports(tmp_path)
    assert main(["report", str(reports / "20261201-020000")]) == 0  # nothing before it
    assert "Since" not in (reports / "20261201-020000" / "summary.md").read_text()
    out = tmp_path / "out"
    assert main(["report", str(reports / "20261201-020000"), "-o", str(out),
                 "--against", str(reports / "20261202-020000")]) == 0
    assert "#### Since 20261202-020000: the same releases; 1 new finding, 1 fixed, 0 flaky" in \
        (out / "summary.md").read_text()


def test_the_last_run_is_the_newest_of_the_same_selection_whatever_its_releases(tmp_path, capsys):
    """Runs of another Python, label or model selection in the same folder are passed over, and so
    is a run directory that cannot be read (with a warning); a run under other releases is the
    last run (what a nightly exists to follow), and the section opens with what changed. The rule
    changed on purpose (issue 39): it compared only runs of the same releases."""
    reports = _reports(tmp_path)  # 20261201-020000, 20261202-020000: both py3.11 tf5.24.0
    write_run(reports / "20261202-030000", [result("llama", "error", signature="E: other python")], python="3.12.1")
    write_run(reports / "20261202-040000", [result("llama", "error", signature="E: other tf")], transformers="5.23.0")
    write_run(reports / "20261202-050000", [result("llama", "error", signature="E: labelled")], label="nightly-gpu")
    write_run(reports / "20261202-055000", [result("modernbert", "error", signature="E: repro")],
              selection=("--models", "modernbert"))
    (reports / "20261202-060000").mkdir()
    (reports / "20261202-060000" / "results.jsonl").write_text("not a results file\n")
    newest = write_run(reports / "20261203-020000", [result("llama", "build"), result("bert", "build"),
                                                      result("gpt2", "error", signature="E: gpt2")])
    assert main(["report", str(newest)]) == 0
    assert "warning: not comparing with 20261202-060000" in capsys.readouterr().err
    summary = (newest / "summary.md").read_text()
    # The 5.23.0 run (of llama alone) is the last one: llama fixed; gpt2 and bert are new types, one failing.
    assert "#### Since 20261202-040000: transformers 5.23.0 -\\> 5.24.0; 0 new findings, 1 fixed, 0 flaky; " \
           "2 new types (1 with findings), 0 removed" in summary
    # A py3.12 run compares with the py3.12 run before it, not with the newer py3.11 ones.
    py312 = write_run(reports / "20261204-020000", [result("llama", "build")], python="3.12.4")
    assert main(["report", str(py312)]) == 0
    assert "#### Since 20261202-030000: the same releases; 0 new findings, 1 fixed, 0 flaky" in \
        (py312 / "summary.md").read_text()


def test_earlier_run_reads_only_the_headers_of_other_selections(tmp_path):
    from auditor.core.results import read_run
    from auditor.report.files import earlier_run

    reports = tmp_path / "reports"
    other = write_run(reports / "1", [result("llama", "build")], checks=("build", "pickle"))
    (other / "results.jsonl").write_text((other / "results.jsonl").read_text() + "{torn\n{\"kind\": 3}\n")
    run = read_run(write_run(reports / "2", [result("llama", "build")]))
    found = earlier_run(run)
    assert found.run is None and found.unreadable == ()  # its rows were never read
    assert found.why == f"none of the 1 earlier run in {reports.resolve()} is of this selection " \
                        "(1: checks build,pickle, not build)"
    engines = (replace(_engine(), version="0.34.0"),)  # vLLM installed there: another release, the same selection
    write_run(reports / "0", [result("llama", "build")], engines=engines)
    assert earlier_run(run).run.path.parent.name == "0"


def test_the_nox_layout_compares_a_python_with_its_own_folder_of_the_run_before(tmp_path):
    """reports/<run-id>/py3.X/: the previous run id's py3.X folder, not the sibling Python's."""
    from auditor.core.results import read_run
    from auditor.report.files import earlier_run

    reports = tmp_path / "reports"
    write_run(reports / "2026-12-01" / "py3.11", [result("llama", "build")], label="py3.11")
    write_run(reports / "2026-12-01" / "py3.12", [result("llama", "build")], label="py3.12", python="3.12.4")
    write_run(reports / "2026-12-02" / "py3.12", [result("llama", "build")], label="py3.12", python="3.12.4",
              transformers="5.25.0")
    later = read_run(write_run(reports / "2026-12-02" / "py3.11", [result("llama", "error", signature="E: x")],
                               label="py3.11", transformers="5.25.0"))
    found = earlier_run(later)
    assert found.run is not None and found.run.path.parent == (reports / "2026-12-01" / "py3.11").resolve()
    first = read_run(reports / "2026-12-01" / "py3.11")
    assert earlier_run(first).run is None
    assert earlier_run(first).why == f"no earlier run in {reports.resolve()}"


def _engine():
    from auditor import engines

    return engines.get("vllm").record()


def test_a_side_by_side_report_says_what_changed_from_its_first_run_to_the_next(tmp_path):
    """upgrade-check's report of base and new (write_report(previous=base)): the since-section
    compares new with base, the matrix holds both."""
    from auditor.core.results import read_run
    from auditor.report import write_report

    base = read_run(write_run(tmp_path / "base", [result("llama", "build"), result("gpt2", "error", signature="E: x")],
                              transformers="5.24.0"))
    new = read_run(write_run(tmp_path / "new", [result("llama", "refused", signature="TypeError: no"),
                                               result("gpt2", "build")], transformers="5.25.0"))
    write_report([base, new], tmp_path / "out", previous=base)
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "#### Since base: transformers 5.24.0 -\\> 5.25.0; 1 new finding, 1 fixed, 0 flaky" in summary
    assert "- new: llama build (build → refused)" in summary


def test_another_selection_is_named_in_flags_a_user_can_read():
    """The why of "nothing to compare with" spells each flag once with its values joined, and
    shortens a long one; the comparison itself reads the whole selection."""
    from auditor.report.since import differences
    from tests.report.helpers import run_info as info_of

    ours = info_of(selection=("--models", "llama", "--models", "gpt2"))
    many = tuple(word for i in range(40) for word in ("--models", f"type{i}"))
    assert differences(ours, info_of(selection=("--models", "llama", "--exclude", "gpt2"))) == [
        "model types --models llama --exclude gpt2, not --models llama,gpt2"]
    (why,) = differences(ours, info_of(selection=many))
    assert why.startswith("model types --models type0,type1,type2,") and "..., not --models llama,gpt2" in why
    assert differences(info_of(selection=many), info_of(selection=many[:-1] + ("type99",))) != []


def test_with_nothing_to_compare_with_the_page_says_why_as_the_sweeps_end_does(tmp_path):
    """The sweep's tables step (auditor.sweeping.tables): the terminal's "Since the last run:
    nothing to compare with: <why>" is in report.html too, not a page silent about the last run."""
    from auditor.sweeping.tables import Tables

    reports = tmp_path / "reports"
    write_run(reports / "1", [result("llama", "build")], checks=("build", "pickle"))
    write_run(reports / "2", [result("llama", "build")])
    tables = Tables(reports / "2")
    tables.finish()
    assert tables.previous is None and tables.earlier.why.startswith("none of the 1 earlier run")
    page = (reports / "2" / "report.html").read_text()
    since = page.split('<section id="since">')[1].split("</section>")[0]
    assert "<h2>Since the last run</h2>" in since
    assert f"Nothing to compare with: none of the 1 earlier run in {reports.resolve()} is of this selection " \
           "(1: checks build,pickle, not build)." in since
    write_run(reports / "3", [result("llama", "error", signature="E: x")])
    Tables(reports / "3").finish()
    page = (reports / "3" / "report.html").read_text()
    assert "<h2>Since 2</h2>" in page and "Nothing to compare with" not in page
