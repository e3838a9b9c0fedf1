"""The one outcome rule: what a row's status means for a person reading the results.

A status says what happened (`refused`, `skipped`, ...); an outcome says whether it is news:
`pass`, a `finding` (what the audit exists to show), `expected` (a failure by design, documented
by the check that wrote it: the by-reference pickle of remote code fails for every type, the bug
by-value pickling works around; or a failure an expected baseline lists, see `expected=`),
`skipped` (the check did not apply, or an earlier gate stopped the engine: nothing was tested) or
`flaky` (it failed with a status the machine can cause, and a rerun of it passed: not a pass, since
it did fail, and not a finding, since it is not confirmed). Every renderer, the `--fail-on` gate, JUnit and the progress line
ask `outcome()` instead of combining `Status.ok`, `skipped` and the `expected` flag themselves,
so that a new label (a flaky cell, one expected by a committed baseline) is added here once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from auditor.core.status import Status

# The key of Result.extras that the writer of a row sets to True when the row fails by design.
# Rows keep writing it as they always did (results.jsonl does not change); only this module reads it.
EXPECTED_KEY = "expected"
# The key of Result.extras a rerun's row carries: its attempt (1 for the first rerun). The cell
# keeps the first row (it decides) and every rerun row after it; the flaky label is read from them.
RERUN_KEY = "rerun"
# The key a rerun's row carries (True) when it ran alone under a single job's memory limit: the
# rerun of an `oom` under a worker's share of the machine's memory (auditor/sweeping/confirm.py).
# That row, not the oom, decides the cell: the share was the machine's limit, the rerun the answer.
ALONE_KEY = "alone"

# Failing statuses the machine can cause rather than the model: a loaded runner times out or runs
# short of memory, a worker dies of something else (a signal, a dying executor), a compiler's
# backend fails (a subprocess, a cache) or a nondeterministic kernel drifts past the tolerance.
# A device error (a sticky one: its worker was retired) is rerun too, in a fresh process.
# A sweep reruns such cells before it reports them (--reruns). graph-break, recompiled,
# specialized and eager-error are properties of the traced code, the same on every run.
UNCONFIRMED = frozenset({Status.TIMEOUT, Status.OOM, Status.CRASH, Status.COMPILE_ERROR, Status.MISMATCH,
                         Status.DEVICE_ERROR})


class Outcome(str, Enum):
    """What a cell means; the values are the words reports print."""

    PASS = "pass"
    FINDING = "finding"
    EXPECTED = "expected"
    SKIPPED = "skipped"
    FLAKY = "flaky"

    def __str__(self) -> str:
        return self.value

    @property
    def label(self) -> str:
        """How a report names the cells of this outcome."""
        return _LABELS[self]


# The word a flaky cell reads as where one word per cell is compared (CellVerdict.label).
FLAKY_LABEL = "flaky"

_LABELS = {Outcome.PASS: "pass", Outcome.FINDING: "finding", Outcome.EXPECTED: "expected by design",
           Outcome.SKIPPED: "skipped", Outcome.FLAKY: "flaky: passed on a rerun"}


def needs_confirmation(status: Status) -> bool:
    """Whether a failing cell with this status is rerun before it is reported."""
    return status in UNCONFIRMED


def outcome(status: Status, extras: Mapping[str, Any] | None = None, *, reruns: Iterable[Status] = (),
            expected: bool = False) -> Outcome:
    """The outcome of a row (or of the cell it decides).

    A pass is a pass whatever else the row says. A skip is checked before the expected flag:
    a row that tested nothing has nothing to expect (JUnit has always shown such a row as
    skipped with its own reason). Only `True` marks a failure as expected: the pickle check
    writes `False` on the row that passes where the bug was expected. `reruns`: the statuses of
    the cell's rerun rows; a failure the machine can cause is flaky when one of them passed (before
    a baseline's say: a cell that passes on a rerun is not reliably failing). `expected`: an
    expected baseline lists this failure (its status and signature).
    """
    if status.ok:
        return Outcome.PASS
    if status is Status.SKIPPED:
        return Outcome.SKIPPED
    if extras is not None and extras.get(EXPECTED_KEY) is True:
        return Outcome.EXPECTED
    if needs_confirmation(status) and any(rerun.ok for rerun in reruns):
        return Outcome.FLAKY
    if expected:
        return Outcome.EXPECTED
    return Outcome.FINDING


@dataclass(frozen=True)
class CellVerdict:
    """The one cell rule, applied: every row that claimed a cell (`Result`s, in the order read)
    judged once. The first row decides the cell (`row`; an `oom` row gives way to its rerun alone,
    ALONE_KEY); the rows after it marked as reruns
    (`reruns`) say whether it is flaky; `outcome` is what the cell means. The matrix, the confirm
    step, bisect, the version ranges and the gates all judge a cell through `judge`."""

    row: Any
    reruns: tuple[Any, ...]
    outcome: Outcome

    @property
    def label(self) -> str:
        """The word for the cell where one word is compared (bisect, ranges): its deciding status,
        or `flaky` where a rerun passed (so a flaky cell never reads as a confirmed failure)."""
        return FLAKY_LABEL if self.outcome is Outcome.FLAKY else self.row.status.value

    @property
    def unconfirmed(self) -> bool:
        """Whether the cell still waits for a rerun: its deciding row failed with a status the
        machine can cause and no rerun passed yet."""
        return needs_confirmation(self.row.status) and not any(r.status.ok for r in self.reruns)


def judge(rows: Sequence[Any], *, expected: bool = False) -> CellVerdict:
    """The verdict of a cell from every row that claimed it; `expected`: an expected baseline
    lists its failure."""
    first = rows[0]
    reruns = tuple(row for row in rows[1:] if is_rerun(row.extras))
    if first.status is Status.OOM:  # an oom under a worker's share: the rerun alone decides (ALONE_KEY)
        first = next((row for row in reruns if row.extras.get(ALONE_KEY) is True), first)
    others = [r.status for r in reruns if r is not first]
    return CellVerdict(first, reruns, outcome(first.status, first.extras, reruns=others, expected=expected))


def cell_outcome(rows: Sequence[Any], *, expected: bool = False) -> Outcome:
    """The outcome of a cell from every row that claimed it (see `judge`)."""
    return judge(rows, expected=expected).outcome


@dataclass(frozen=True)
class Tally:
    """Cells counted by outcome: the one count every output (the end of a sweep, summary.md,
    report.html, JUnit, the gates) prints, so that they all say the same number of findings.
    Skipped cells tested nothing: the denominator is the cells that ran."""

    passed: int = 0
    findings: int = 0
    flaky: int = 0
    expected: int = 0
    skipped: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Tally:
        counts = dict.fromkeys(Outcome, 0)
        for o in outcomes:
            counts[o] += 1
        return cls(counts[Outcome.PASS], counts[Outcome.FINDING], counts[Outcome.FLAKY], counts[Outcome.EXPECTED],
                   counts[Outcome.SKIPPED])

    @property
    def ran(self) -> int:
        return self.passed + self.findings + self.flaky + self.expected

    def text(self) -> str:
        """`1200 cells ran: 300 findings, 2 flaky, 40 expected, 858 pass; 96 skipped`."""
        parts = [f"{self.findings} finding{'s' if self.findings != 1 else ''}"]
        parts += [f"{n} {word}" for n, word in ((self.flaky, "flaky"), (self.expected, "expected")) if n]
        text = f"{self.ran} cell{'s' if self.ran != 1 else ''} ran: " + ", ".join(parts) + f", {self.passed} pass"
        return text + (f"; {self.skipped} skipped" if self.skipped else "")


def is_rerun(extras: Mapping[str, Any]) -> bool:
    return isinstance(extras.get(RERUN_KEY), int)
