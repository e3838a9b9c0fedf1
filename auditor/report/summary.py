"""Counting a matrix: status counts per column and per environment, and the common failures.

A matrix built with an expected baseline (auditor.report.baseline.expected_matrix) counts the
failures the baseline relabelled under `expected` (Cell.shown), apart from the other failures and
from the failures by design: `N expected (baseline FILE)`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.core.fault import Fault
from auditor.core.outcome import Outcome, Tally
from auditor.report.causes import finding_text
from auditor.report.matrix import Cell, Matrix, column_order
from auditor.report.statuses import rank


@dataclass(frozen=True)
class Counts:
    """Status counts of some cells, in legend order."""

    items: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, statuses: Iterable[str]) -> Counts:
        counter = Counter(statuses)
        return cls(tuple(sorted(counter.items(), key=lambda kv: rank(kv[0]))))

    @property
    def total(self) -> int:
        return sum(n for _, n in self.items)

    def share(self, count: int) -> float:
        return 100.0 * count / self.total if self.total else 0.0


@dataclass(frozen=True)
class ColumnSummary:
    environment: str
    column: str
    counts: Counts
    expected: int = 0  # failing cells that fail by design (counted in `counts` too)


@dataclass(frozen=True)
class FailureGroup:
    """Failing cells that share an error signature."""

    signature: str
    count: int
    statuses: tuple[str, ...]
    columns: tuple[str, ...]
    environments: tuple[str, ...]
    model_types: tuple[str, ...]
    expected: int = 0  # of `count`: cells that fail by design
    faults: tuple[str, ...] = ()  # whose fault the cells are (auditor.core.fault), most cells first
    # One cell's own message, whole (the first of the group): a reader sees its numbers, where the
    # signature that groups them has N.
    example: str = ""


@dataclass(frozen=True)
class Finding:
    """What one matrix column says: how many model types passed, and the failures by status.

    Failures that are expected by design (the by-reference pickle of remote code fails for
    every type: the bug by-value pickling works around) are counted apart and labelled."""

    environment: str
    column: str
    total: int
    passed: int
    failures: tuple[tuple[str, int, tuple[str, ...]], ...]  # (status, count, model types), most first
    expected: int = 0  # failing by design
    baseline: int = 0  # failures the expected baseline lists
    baseline_name: str = ""
    skipped: int = 0  # tested nothing: counted apart, and not in the denominator

    @property
    def ran(self) -> int:
        return self.total - self.skipped

    def text(self, names: int = 3) -> str:
        """`decorate/decoder/legacy: 345/600 pass · refused 1 (t5gemma2) · error 35 · 22 skipped`:
        out of the cells that ran."""
        parts = [f"{self.passed}/{self.ran} pass"]
        for status, count, model_types in self.failures:
            shown = f" ({', '.join(model_types)})" if count <= names else ""
            parts.append(f"{status} {count}{shown}")
        if self.expected:
            parts.append(f"{self.expected} failing as expected by design")
        if self.baseline:
            parts.append(f"{self.baseline} {expected_label(self.baseline_name)}")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        return f"{self.column}: " + " · ".join(parts)


def findings(matrix: Matrix) -> tuple[Finding, ...]:
    """One Finding per matrix column, in matrix order: the passes, every failure by status (the
    flaky ones apart), and the expected failures and skipped cells counted apart."""
    by_column: dict[tuple[str, str], list[tuple[str, Cell]]] = {}
    for model_type, col, cell in matrix.cells():
        by_column.setdefault((col.environment, col.column), []).append((model_type, cell))
    found = []
    for col in matrix.columns:
        cells = by_column.get((col.environment, col.column), [])
        outcomes = [(model_type, c, _apart(c)) for model_type, c in cells]
        failing: dict[str, list[str]] = {}
        for model_type, c, o in outcomes:
            if o not in (Outcome.PASS, Outcome.EXPECTED, Outcome.SKIPPED, _BASELINE):  # flaky: apart from the confirmed
                failing.setdefault(f"{c.status} (flaky)" if o is Outcome.FLAKY else c.status, []).append(model_type)
        ordered = sorted(failing.items(), key=lambda kv: (-len(kv[1]), rank(kv[0])))
        found.append(Finding(col.environment, col.column, len(cells), _count(outcomes, Outcome.PASS),
                             tuple((s, len(m), tuple(sorted(m))) for s, m in ordered),
                             _count(outcomes, Outcome.EXPECTED), _count(outcomes, _BASELINE), matrix.baseline or "",
                             _count(outcomes, Outcome.SKIPPED)))
    return tuple(found)


def tally(matrix: Matrix) -> Tally:
    """Every cell of the matrix counted by the one outcome rule: the totals every output prints."""
    return Tally.of(cell.outcome for _, _, cell in matrix.cells())


def _count(outcomes, which) -> int:
    return sum(1 for *_, o in outcomes if o is which)


# A cell the expected baseline relabelled, counted apart from the failures by design.
_BASELINE = "baseline"


def _apart(cell: Cell) -> Outcome | str:
    """The cell's outcome, or _BASELINE where the expected baseline is what made it `expected`."""
    return _BASELINE if cell.by_baseline else cell.outcome


def expected_label(baseline: str | None) -> str:
    """How reports name the failures an expected baseline lists: `expected (baseline FILE)`."""
    return f"expected (baseline {baseline})" if baseline else "expected (baseline)"


def column_summaries(matrix: Matrix) -> tuple[ColumnSummary, ...]:
    by_column: dict = {}
    for _, col, cell in matrix.cells():
        by_column.setdefault(col, []).append(cell)
    return tuple(
        ColumnSummary(col.environment, col.column, Counts.of(c.shown for c in by_column.get(col, ())),
                      sum(1 for c in by_column.get(col, ()) if _apart(c) is Outcome.EXPECTED))
        for col in matrix.columns
    )


def environment_counts(matrix: Matrix) -> tuple[tuple[str, Counts], ...]:
    cells = matrix.cells()
    return tuple((env, Counts.of(c.shown for _, k, c in cells if k.environment == env))
                 for env in matrix.environments)


NOT_PASSED = frozenset(o for o in Outcome if o is not Outcome.PASS)


def failure_groups(matrix: Matrix, limit: int | None = 30, outcomes: frozenset[Outcome] = NOT_PASSED,
                   by_baseline: bool | None = None) -> tuple[FailureGroup, ...]:
    """The most common causes (auditor.report.causes) of the cells of `outcomes` (every cell that did not pass, by
    default; report.html's table asks for the findings alone), most frequent first; `by_baseline`
    True or False: only the cells an expected baseline relabelled, or only the others."""
    by_signature: dict[str, list] = {}
    for model_type, col, cell in matrix.cells():
        if cell.outcome not in outcomes or by_baseline not in (None, cell.by_baseline):
            continue
        # The auditor's own errors are never one group with another fault's cells of the same cause.
        key = (cell.cause or f"({cell.status})", cell.result.fault == Fault.AUDITOR.value)
        by_signature.setdefault(key, []).append((model_type, col, cell))
    groups = [
        FailureGroup(
            signature=signature,
            count=len(hits),
            statuses=tuple(sorted({c.status for _, _, c in hits}, key=rank)),
            columns=tuple(sorted({k.column for _, k, _ in hits}, key=column_order)),
            environments=tuple(e for e in matrix.environments if any(k.environment == e for _, k, _ in hits)),
            model_types=tuple(sorted({m for m, _, _ in hits})),
            expected=sum(1 for _, _, c in hits if c.outcome is Outcome.EXPECTED),
            faults=tuple(f for f, _ in Counter(c.result.fault for _, _, c in hits).most_common() if f),
            example=finding_text(hits[0][2].result.message, signature),
        )
        for (signature, _), hits in by_signature.items()
    ]
    groups.sort(key=lambda g: (-g.count, g.signature))
    return tuple(groups[:limit] if limit is not None else groups)


def auditor_errors(matrix: Matrix) -> tuple[FailureGroup, ...]:
    """The causes of the cells that are the auditor's own fault (a bug of ours, never the model's),
    most frequent first: what heads a report that has any."""
    return tuple(group for group in failure_groups(matrix, limit=None) if group.faults == (Fault.AUDITOR.value,))


@dataclass(frozen=True)
class Apart:
    """The cells of one outcome that is neither a pass nor a finding (skipped, expected by
    design), counted apart from the failures, with their most common reason."""

    outcome: Outcome
    count: int
    reason: FailureGroup | None  # the most common signature among them
    baseline: str | None = None  # the expected baseline that relabelled them; None: not relabelled

    @property
    def label(self) -> str:
        return self.outcome.label if self.baseline is None else expected_label(self.baseline)


# Skipped cells, failures by design, failures an expected baseline lists (False, True: by_baseline).
APART = ((Outcome.SKIPPED, False), (Outcome.EXPECTED, False), (Outcome.EXPECTED, True))


def counted_apart(matrix: Matrix) -> tuple[Apart, ...]:
    """Per kind of APART that some cell has: how many cells, and their most common reason."""
    found = []
    for which, by_baseline in APART:
        groups = failure_groups(matrix, limit=None, outcomes=frozenset({which}), by_baseline=by_baseline)
        if groups:
            found.append(Apart(which, sum(g.count for g in groups), groups[0],
                               (matrix.baseline or "") if by_baseline else None))
    return tuple(found)
