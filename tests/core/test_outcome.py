"""The one outcome rule: what each status and the expected flag mean for a reader."""

from __future__ import annotations

from auditor.core.outcome import Outcome, outcome
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
    assert [str(o) for o in Outcome] == ["pass", "finding", "expected", "skipped"]
    assert Outcome.EXPECTED.label == "expected by design" and f"{Outcome.SKIPPED}" == "skipped"
