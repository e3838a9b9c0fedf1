"""Confirming before reporting: a failure the machine can cause is rerun in a fresh worker; a
cell whose rerun passes is flaky (both rows kept), one whose rerun fails too is confirmed.

Real sweeps (the CLI, real workers, real transformers) of three plugin types
(tests/plugins/flaky_models.py), with the default --reruns 1 and with --reruns 0: the session's
`flaky_sweeps` (tests/conftest.py), shared with the nightly history's tests."""

from __future__ import annotations

import math
from pathlib import Path

import psutil
import pytest

from auditor.core.outcome import Outcome
from auditor.core.results import read_run
from auditor.report.matrix import build_matrix
from auditor.report.summary import findings
from auditor.sweeping.confirm import pending
from tests.conftest import FLAKY_TYPES, ROOT, run_auditor


@pytest.fixture(scope="module")
def sweeps(flaky_sweeps):
    """(runs' parent, the --reruns 1 sweep, a --reruns 0 sweep): the shared sweeps of conftest."""
    (reruns, done), (no_reruns, undone) = flaky_sweeps["reruns"], flaky_sweeps["2026-11-01"]
    return reruns, done, no_reruns, undone


def _cells(outdir: Path) -> dict:
    matrix = build_matrix([read_run(outdir)])
    return {model_type: cell for model_type, _, cell in matrix.cells()}


def test_a_cell_whose_rerun_passes_is_flaky_with_both_rows_kept(sweeps):
    reruns, done, _, _ = sweeps
    cell = _cells(reruns)["auditor_flaky_flip"]
    assert cell.outcome is Outcome.FLAKY
    assert [r.status.value for r in cell.results] == ["oom", "build"]
    assert cell.status.value == "oom"  # the first row decides; the label says what the rerun showed
    assert "rerun" not in cell.results[0].extras and cell.results[1].extras["rerun"] == 1
    assert cell.results[0].worker != cell.results[1].worker  # a fresh worker


def test_a_cell_that_fails_again_is_confirmed_and_a_passing_one_is_not_rerun(sweeps):
    reruns, done, _, _ = sweeps
    cells = _cells(reruns)
    always = cells["auditor_flaky_always"]
    assert always.outcome is Outcome.FINDING and [r.status.value for r in always.results] == ["oom", "oom"]
    assert cells["auditor_flaky_fine"].outcome is Outcome.PASS and len(cells["auditor_flaky_fine"].results) == 1


def test_the_gate_fails_on_confirmed_failures_only(sweeps):
    _, done, _, undone = sweeps
    assert done.returncode == 1, done.stderr
    gate = next(line for line in done.stderr.splitlines() if "--fail-on" in line)
    assert "auditor_flaky_always" in gate and "auditor_flaky_flip" not in gate
    assert undone.returncode == 1, undone.stderr
    gate = next(line for line in undone.stderr.splitlines() if "--fail-on" in line)
    assert "auditor_flaky_always" in gate and "auditor_flaky_flip" in gate


def test_without_reruns_both_are_failures_with_one_row_each(sweeps):
    _, _, no_reruns, undone = sweeps
    cells = _cells(no_reruns)
    for model_type in ("auditor_flaky_always", "auditor_flaky_flip"):
        assert cells[model_type].outcome is Outcome.FINDING, model_type
        assert len(cells[model_type].results) == 1, model_type
    assert "Rerunning" not in undone.stderr


def test_the_summary_counts_the_reruns(sweeps):
    reruns, done, no_reruns, _ = sweeps
    assert "Rerunning 2 cells of 2 model types" in done.stderr
    summary = (reruns / "summary.md").read_text()
    assert "2 cells rerun: 1 flaky (passed on a rerun), 1 confirmed" in summary
    assert "rerun" not in (no_reruns / "summary.md").read_text()
    headline = findings(build_matrix([read_run(reruns)]))[0].text()  # report.html's, and the CLI's last lines
    assert headline == "build: 1/3 pass · oom 1 (auditor_flaky_always) · oom (flaky) 1 (auditor_flaky_flip)"


def test_what_is_left_to_rerun_is_read_from_the_file(sweeps, tmp_path):
    """A sweep killed after its first pass, or in the middle of a rerun's unit, leaves a file
    from which a resume finds the same cells to rerun; a finished one leaves none (unless more
    reruns are asked for: only the confirmed failure is tried again)."""
    reruns, _, _, _ = sweeps
    lines = (reruns / "results.jsonl").read_text().splitlines(keepends=True)
    first_pass = lines[:1 + 2 * len(FLAKY_TYPES)]  # the header, then a row and its completion record per type
    cut = tmp_path / "results.jsonl"
    cut.write_text("".join(first_pass) + lines[len(first_pass)][:40])  # torn in the first rerun's row
    left = pending(read_run(cut).results, reruns=1)
    assert {p.model_type: list(p.attempts.values()) for p in left} == {
        "auditor_flaky_always": [1], "auditor_flaky_flip": [1]}
    finished = read_run(reruns).results
    assert pending(finished, reruns=1) == []
    assert [(p.model_type, list(p.attempts.values())) for p in pending(finished, reruns=2)] == [
        ("auditor_flaky_always", [2])]


def test_an_oom_under_a_jobs_share_is_rerun_alone_and_its_rerun_decides(tmp_path):
    """--max-memory auto shares 80% of the machine's memory between the jobs; a type over its share
    (tests/plugins/memory_share.py: 2 GiB held while built) is rerun alone with all of it, and that
    row decides the cell: a real sweep, real workers, the pool's real memory limit."""
    usable = psutil.virtual_memory().total * 0.8
    if usable < 4 * 2**30:
        pytest.skip("the machine has too little memory for a 2 GiB type to fit alone")
    jobs = math.ceil(usable / 2**30) + 1  # a share under 1 GiB; one type starts one worker whatever --jobs says
    proc = run_auditor("sweep", "--plugin", str(ROOT / "tests/plugins/memory_share.py"), "--models",
                       "auditor_share_hog", "--checks", "build", "--jobs", str(jobs), "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "went out of memory under a job's share (--max-memory auto): rerun alone" in proc.stderr
    cell = _cells(tmp_path)["auditor_share_hog"]
    assert [r.status.value for r in cell.results] == ["oom", "build"]
    assert cell.results[1].extras["rerun"] == 1 and cell.results[1].extras["alone"] is True
    assert cell.result is cell.results[1] and cell.outcome is Outcome.PASS
