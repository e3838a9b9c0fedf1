"""The one outcome rule: what a row's status means for a person reading the results.

A status says what happened (`refused`, `skipped`, ...); an outcome says whether it is news:
`pass`, a `finding` (what the audit exists to show), `expected` (a failure by design, documented
by the check that wrote it: the by-reference pickle of remote code fails for every type, the bug
by-value pickling works around) or `skipped` (the check did not apply, or an earlier gate stopped
the engine: nothing was tested). Every renderer, the `--fail-on` gate, JUnit and the progress line
ask `outcome()` instead of combining `Status.ok`, `skipped` and the `expected` flag themselves,
so that a new label (a flaky cell, one expected by a committed baseline) is added here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from auditor.core.status import Status

# The key of Result.extras that the writer of a row sets to True when the row fails by design.
# Rows keep writing it as they always did (results.jsonl does not change); only this module reads it.
EXPECTED_KEY = "expected"


class Outcome(str, Enum):
    """What a cell means; the values are the words reports print."""

    PASS = "pass"
    FINDING = "finding"
    EXPECTED = "expected"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value

    @property
    def label(self) -> str:
        """How a report names the cells of this outcome."""
        return _LABELS[self]


_LABELS = {Outcome.PASS: "pass", Outcome.FINDING: "finding", Outcome.EXPECTED: "expected by design",
           Outcome.SKIPPED: "skipped"}


def outcome(status: Status, extras: Mapping[str, Any] | None = None) -> Outcome:
    """The outcome of a row (or of the cell it decides).

    A pass is a pass whatever else the row says. A skip is checked before the expected flag:
    a row that tested nothing has nothing to expect (JUnit has always shown such a row as
    skipped with its own reason). Only `True` marks a failure as expected: the pickle check
    writes `False` on the row that passes where the bug was expected.
    """
    if status.ok:
        return Outcome.PASS
    if status is Status.SKIPPED:
        return Outcome.SKIPPED
    if extras is not None and extras.get(EXPECTED_KEY) is True:
        return Outcome.EXPECTED
    return Outcome.FINDING
