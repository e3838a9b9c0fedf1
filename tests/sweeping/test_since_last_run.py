"""A sweep's own reports and its end summary say what changed since the run before it: the newest
run of the same selection in the same reports folder, whatever releases it ran under
(auditor.report.files.earlier_run), or `--against`.

One real sweep (the CLI, real workers, real transformers) of gpt2 and a plugin type that fails
(tests/plugins/troublemakers.py's auditor_missing), into a reports folder that already holds an
earlier run of this selection under an older transformers, newer ones of another Python and of
another selection (a one-off repro run), and one that cannot be read, written with the real
ResultsWriter and this machine's own header (its transformers version replaced in the earlier one)."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace

import pytest

from auditor.cli import build_parser, main
from auditor.cli.sweep import reproduce_command
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.core.writing import ResultsWriter
from auditor.sweeping.options import SweepRequest, make_request, values_of
from tests.conftest import TROUBLEMAKERS, run_auditor

EARLIER, OTHER, ONE_OFF, BROKEN, THIS = ("20261201T020000Z", "20261201T030000Z", "20261201T035000Z",
                                         "20261201T040000Z", "20261202T020000Z")


def _header(models: str = "gpt2,auditor_missing"):
    """This machine's results header, as a sweep of `--models MODELS --checks build` writes it."""
    from auditor import engines
    from auditor.core.runinfo import probe
    from auditor.sweeping.resume import selection_flags

    request = make_request(models=models)
    return probe("auditor sweep --checks build", device="meta", checks=("build",),
                 engines=tuple(engine.record() for engine in engines.all()),
                 experiment={"policies": list(request.policies)}, selection=tuple(selection_flags(request)))


def _write(directory, info, rows) -> None:
    directory.mkdir(parents=True)
    with ResultsWriter(directory / "results.jsonl", info) as writer:
        writer.write_all(rows)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    reports = tmp_path_factory.mktemp("since") / "reports"
    info = _header()
    # The earlier run: gpt2 failed and auditor_missing built; this sweep fixes the one and breaks the other.
    _write(reports / EARLIER, replace(info, transformers="5.24.0"), [
        Result("gpt2", "build", Status.ERROR, message="ValueError: gpt2 broke", signature="ValueError: gpt2 broke"),
        Result("auditor_missing", "build", Status.BUILD)])
    # Newer, of another Python: compared with it, nothing would have changed.
    _write(reports / OTHER, replace(info, python="3.9.18"), [
        Result("gpt2", "build", Status.BUILD),
        Result("auditor_missing", "build", Status.MISSING_DEPENDENCY, message="ImportError: x", signature="ImportError: x")])
    # Newer, of another selection (a one-off run of one type): never the last run.
    _write(reports / ONE_OFF, _header("gpt2"), [Result("gpt2", "build", Status.BUILD)])
    (reports / BROKEN).mkdir()
    (reports / BROKEN / "results.jsonl").write_text('{"kind": "header", "format_version": 99}\n')
    proc = run_auditor("sweep", "--plugin", TROUBLEMAKERS, "--models", "gpt2,auditor_missing", "--checks", "build",
                       "--reruns", "0", "--jobs", "2", "--timeout", "120", "--reports", str(reports), "--run-id", THIS,
                       "--markdown", str(reports / "step-summary.md"))
    assert proc.returncode == 0, proc.stderr
    return reports, proc


def test_the_end_of_the_sweep_says_what_changed_since_the_run_before(swept):
    reports, proc = swept
    lines = proc.stderr.splitlines()
    since = lines.index(f"Since {EARLIER}: transformers 5.24.0 -> {_header().transformers}; "
                        "1 new finding, 1 fixed, 0 flaky")
    new, again = lines[since + 1], lines[since + 2]  # no backend check: no engine verdicts to compare
    assert new.startswith("  new: auditor_missing build: build -> missing-dependency: ") and new.endswith(
        "(fault: environment)"), new
    # The run's header recorded what changes a cell, as the sweep resolved it (device, backend, dtype).
    assert again == (f"    again: auditor sweep --models auditor_missing --checks build --plugin {TROUBLEMAKERS} "
                     "--device meta --backend aot_eager --dtype float32")
    assert lines[since + 3] == f"  every change: see {reports / THIS / 'report.html'}"
    assert f"warning: not comparing with {BROKEN}" in proc.stderr
    assert OTHER not in proc.stderr and ONE_OFF not in proc.stderr
    assert since < next(i for i, line in enumerate(lines) if line.startswith("Done: "))  # right after the verdicts


def test_the_sweeps_own_reports_say_it_too(swept):
    reports, _ = swept
    page = (reports / THIS / "report.html").read_text()
    section = page.split('<section id="since">')[1].split("</section>")[0]
    assert f"<h2>Since {EARLIER}</h2>" in section and "transformers 5.24.0 -&gt; " in section
    assert '<tr data-change="new" data-type="auditor_missing">' in section
    assert '<tr data-change="fixed" data-type="gpt2">' in section
    for summary in (reports / THIS / "summary.md", reports / "step-summary.md"):
        text = summary.read_text()
        assert f"#### Since {EARLIER}: transformers 5.24.0 -\\> " in text, summary
        assert "; 1 new finding, 1 fixed, 0 flaky" in text, summary
        assert r"- new: auditor\_missing build (build → missing-dependency)" in text  # Markdown escapes `_`


def test_against_names_the_run_and_an_unreadable_one_refuses_the_sweep(swept, tmp_path, capsys):
    reports, _ = swept
    out = tmp_path / "run"
    assert main(["sweep", "--models", "gpt2", "--checks", "build", "-o", str(out),
                 "--against", str(reports / BROKEN)]) == 2
    err = capsys.readouterr().err
    assert f"--against {reports / BROKEN}: " in err and "format version 99" in err
    assert not (out / "results.jsonl").exists()  # refused before any work


def test_the_first_run_of_a_selection_says_nothing_of_a_last_run(tmp_path):
    # auditor report of the other-Python run alone in a folder: no run of its selection before it.
    from auditor.core.results import read_run
    from auditor.report.files import earlier_run

    info = _header()
    _write(tmp_path / "a", replace(info, python="3.9.18"), [Result("gpt2", "build", Status.BUILD)])
    _write(tmp_path / "b", info, [Result("gpt2", "build", Status.BUILD)])
    assert earlier_run(read_run(tmp_path / "b")).run is None


def test_the_command_that_sweeps_a_cell_again_keeps_what_changes_a_cell():
    request = SweepRequest(models=("llama", "gpt.*"), exclude=("bert",), checks=("build", "decorate"),
                           policies=("legacy",), plugins=("my_plugin.py",), device="meta", label="nightly",
                           shard="2/3", jobs=3, timeout=9.0)
    command = reproduce_command(request, "gpt2", "decorate/decoder/legacy")
    assert command == "auditor sweep --models gpt2 --checks decorate --plugin my_plugin.py --policies legacy --device meta"
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    again = make_request(**values_of(subparsers.choices["sweep"].parse_args(shlex.split(command)[2:])))
    assert (again.models, again.checks, again.policies, again.plugins) == (("gpt2",), ("decorate",), ("legacy",),
                                                                          ("my_plugin.py",))
    assert reproduce_command(SweepRequest(), "bert", "build") == "auditor sweep --models bert --checks build"
