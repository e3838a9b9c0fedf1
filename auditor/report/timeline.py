"""A timeline per cell across the nightly history: each night's status, the first night it
failed, and its flips.

A night's mark is the cell's outcome (auditor.core.outcome) that night: a pass, a failure (a
finding), or neither (skipped, expected, or no such cell that night), or flaky (it failed and
passed on a rerun that night). A flip is a pass followed by a failure or a failure by a pass,
between nights that had either (the nights between without one are passed over). Two flips in a
row (pass, fail, pass or fail, pass, fail) make a cell flaky in the history, as a night's rerun
that passed does: what changes back and forth is not news each time it changes.

Pure: runs in (oldest first), timelines out; history.py renders them, the CLI writes the CSV.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.outcome import Outcome
from auditor.core.results import Run
from auditor.report.matrix import build_matrix, column_order, run_name

TIMELINE_FILE = "timeline.csv"
_STATES = {Outcome.PASS: "pass", Outcome.FINDING: "fail"}  # what a flip is between


@dataclass(frozen=True)
class Mark:
    """One night of one cell."""

    night: str  # the run directory's name
    status: str  # "" when the night has no such cell
    outcome: str  # an Outcome's value; "absent" when the night has no such cell

    @property
    def state(self) -> str:
        """"pass", "fail", or "" (neither: skipped, expected, flaky or absent)."""
        return _STATES.get(Outcome(self.outcome), "") if self.outcome != "absent" else ""


@dataclass(frozen=True)
class CellTimeline:
    model_type: str
    column: str
    marks: tuple[Mark, ...]  # one per night, oldest first

    @property
    def first_failed(self) -> str:
        """The first night of the window it failed on ("" when it never did)."""
        return next((m.night for m in self.marks if m.state == "fail"), "")

    @property
    def failing_since(self) -> str:
        """The night its current run of failures began, when it fails on the newest night it has."""
        since = ""
        for mark in self.marks:
            if mark.state == "fail":
                since = since or mark.night
            elif mark.state == "pass":
                since = ""
        return since

    @property
    def flips(self) -> int:
        states = self._states()
        return sum(1 for a, b in zip(states, states[1:], strict=False) if a != b)

    @property
    def flaky(self) -> bool:
        """Two flips in a row, or a night whose rerun passed."""
        states = self._states()
        back_and_forth = any(a != b and b != c for a, b, c in zip(states, states[1:], states[2:], strict=False))
        return back_and_forth or any(m.outcome == Outcome.FLAKY.value for m in self.marks)

    def _states(self) -> list[str]:
        return [m.state for m in self.marks if m.state]


def timelines(runs: Sequence[Run]) -> tuple[CellTimeline, ...]:
    """The timeline of every cell whose status or outcome changed across `runs` (oldest first),
    or that was flaky on some night; by model type, then column."""
    nights = []
    for run in runs:
        nights.append((run_name(run), {(model_type, col.column): cell
                                       for model_type, col, cell in build_matrix([run]).cells()}))
    keys = sorted({key for _, cells in nights for key in cells}, key=lambda k: (k[0], column_order(k[1])))
    found = []
    for model_type, column in keys:
        marks = tuple(_mark(name, cells.get((model_type, column))) for name, cells in nights)
        present = {(m.status, m.outcome) for m in marks if m.outcome != "absent"}
        if len(present) > 1 or any(m.outcome == Outcome.FLAKY.value for m in marks):
            found.append(CellTimeline(model_type, column, marks))
    return tuple(found)


def _mark(night: str, cell) -> Mark:
    if cell is None:
        return Mark(night, "", "absent")
    return Mark(night, cell.status.value, cell.outcome.value)


def render_timeline_csv(runs: Sequence[Run], cells: Sequence[CellTimeline]) -> str:
    """timeline.csv: one row per cell and night, with that night's environment, the cell's first
    failing night, its flips and whether the history finds it flaky."""
    infos = {run_name(run): run.info for run in runs}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["model_type", "column", "night", "started", "status", "outcome", "python", "torch",
                     "transformers", "engines", "first_failed", "failing_since", "flips", "flaky"])
    for cell in cells:
        for mark in cell.marks:
            info = infos[mark.night]
            engines = " ".join(f"{e.name}={e.version}" for e in sorted(info.engines, key=lambda e: e.name))
            writer.writerow([cell.model_type, cell.column, mark.night, info.started, mark.status, mark.outcome,
                             info.python, info.torch, info.transformers, engines, cell.first_failed,
                             cell.failing_since, cell.flips, str(cell.flaky).lower()])
    return out.getvalue()
