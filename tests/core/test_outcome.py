"""The one outcome rule: what each status and the expected flag mean for a reader."""

from __future__ import annotations

from auditor.core.outcome import UNCONFIRMED, Outcome, cell_outcome, outcome
from auditor.core.results import Result
from auditor.core.status import Status


def test_passes_are_passes_whatever_the_row_says():
    assert outcome(Status.BUILD) is Outcome.PASS and outcome(Status.COMPILED) is Outcome.PASS
    assert outcome(Status.BUILD, {"expected": True}) is Outcome.PASS


def test_every_other_status_is_a_finding_unless_skipped_or_expected():
    for status in Status:
        if not status.ok and status is not Status.SKIPPED:
            assert outcome(status) is Outcome.FINDING, status
            assert outcome(status, {"expected": False}) is Outcome.FINDING, status
            assert outcome(status, {"expected": True}) is Outcome.EXPECTED, status


def test_a_skip_tested_nothing_so_it_expects_nothing():
    assert outcome(Status.SKIPPED) is Outcome.SKIPPED
    assert outcome(Status.SKIPPED, {"expected": True}) is Outcome.SKIPPED


def test_only_true_marks_a_failure_expected():
    assert outcome(Status.ERROR, {"expected": 1}) is Outcome.FINDING
    assert outcome(Status.ERROR, {"expected": "yes"}) is Outcome.FINDING


def test_the_words_reports_print():
    assert [str(o) for o in Outcome] == ["pass", "finding", "expected", "skipped", "flaky"]
    assert Outcome.EXPECTED.label == "expected by design" and f"{Outcome.SKIPPED}" == "skipped"


def test_a_failure_the_machine_can_cause_is_flaky_when_a_rerun_passed():
    for status in Status:
        if status.ok or status is Status.SKIPPED:
            continue
        flaky = outcome(status, reruns=[Status.OOM, Status.BUILD])
        assert flaky is (Outcome.FLAKY if status in UNCONFIRMED else Outcome.FINDING), status
        assert outcome(status, reruns=[status]) is Outcome.FINDING, status
    assert UNCONFIRMED == {Status.TIMEOUT, Status.OOM, Status.CRASH, Status.COMPILE_ERROR, Status.MISMATCH,
                           Status.DEVICE_ERROR}


def test_a_baseline_makes_a_failure_expected_but_not_a_flaky_one():
    assert outcome(Status.ERROR, expected=True) is Outcome.EXPECTED
    assert outcome(Status.BUILD, expected=True) is Outcome.PASS
    assert outcome(Status.CRASH, reruns=[Status.BUILD], expected=True) is Outcome.FLAKY


def test_a_cell_is_decided_by_its_first_row_and_only_rerun_rows_make_it_flaky():
    first = Result("t", "build", Status.TIMEOUT)
    passed_again = Result("t", "build", Status.BUILD)  # another run's row (a shard), not a rerun
    rerun = Result("t", "build", Status.BUILD, extras={"rerun": 1})
    assert cell_outcome([first, passed_again]) is Outcome.FINDING
    assert cell_outcome([first, rerun]) is Outcome.FLAKY
    assert cell_outcome([passed_again, Result("t", "build", Status.CRASH, extras={"rerun": 1})]) is Outcome.PASS


def test_an_oom_gives_way_to_its_rerun_alone():
    """An oom under a job's share of the memory is decided by the rerun that ran alone with the
    machine's (extras alone), whatever it says; without one it is the first row's, as any cell."""
    from auditor.core.outcome import judge

    oom = Result("t", "build", Status.OOM)
    alone_pass = Result("t", "build", Status.BUILD, extras={"rerun": 1, "alone": True})
    alone_oom = Result("t", "build", Status.OOM, extras={"rerun": 1, "alone": True})
    assert judge([oom, alone_pass]).row is alone_pass and judge([oom, alone_pass]).outcome is Outcome.PASS
    assert judge([oom, alone_oom]).row is alone_oom and judge([oom, alone_oom]).outcome is Outcome.FINDING
    assert judge([oom, Result("t", "build", Status.BUILD, extras={"rerun": 1})]).outcome is Outcome.FLAKY
    timeout = Result("t", "build", Status.TIMEOUT)  # only an oom gives way
    assert judge([timeout, alone_pass]).row is timeout
