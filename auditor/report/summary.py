"""Counting a matrix: status counts per column and per environment, and the common failures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.report.matrix import Matrix, column_order
from auditor.report.statuses import is_ok, rank


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
    expected: int = 0

    def text(self, names: int = 3) -> str:
        """`decorate/decoder/legacy: 345/622 pass · refused 1 (t5gemma2) · error 35`."""
        parts = [f"{self.passed}/{self.total} pass"]
        for status, count, model_types in self.failures:
            shown = f" ({', '.join(model_types)})" if count <= names else ""
            parts.append(f"{status} {count}{shown}")
        if self.expected:
            parts.append(f"{self.expected} failing as expected by design")
        return f"{self.column}: " + " · ".join(parts)


def findings(matrix: Matrix) -> tuple[Finding, ...]:
    """One Finding per matrix column, in matrix order."""
    by_column: dict[tuple[str, str], list[tuple[str, object]]] = {}
    for model_type, col, cell in matrix.cells():
        by_column.setdefault((col.environment, col.column), []).append((model_type, cell))
    found = []
    for col in matrix.columns:
        cells = by_column.get((col.environment, col.column), [])
        passed = sum(1 for _, c in cells if is_ok(c.status))
        expected = sum(1 for _, c in cells if not is_ok(c.status) and c.expected)
        failing: dict[str, list[str]] = {}
        for model_type, c in cells:
            if not is_ok(c.status) and not c.expected:
                failing.setdefault(c.status, []).append(model_type)
        ordered = sorted(failing.items(), key=lambda kv: (-len(kv[1]), rank(kv[0])))
        found.append(Finding(col.environment, col.column, len(cells), passed,
                             tuple((s, len(m), tuple(sorted(m))) for s, m in ordered), expected))
    return tuple(found)


def column_summaries(matrix: Matrix) -> tuple[ColumnSummary, ...]:
    cells = matrix.cells()
    return tuple(
        ColumnSummary(col.environment, col.column, Counts.of(c.status for _, k, c in cells if k == col),
                      sum(1 for _, k, c in cells if k == col and c.expected and not is_ok(c.status)))
        for col in matrix.columns
    )


def environment_counts(matrix: Matrix) -> tuple[tuple[str, Counts], ...]:
    cells = matrix.cells()
    return tuple((env, Counts.of(c.status for _, k, c in cells if k.environment == env))
                 for env in matrix.environments)


def failure_groups(matrix: Matrix, limit: int | None = 30) -> tuple[FailureGroup, ...]:
    """The most common signatures of failing cells, most frequent first."""
    by_signature: dict[str, list] = {}
    for model_type, col, cell in matrix.cells():
        if is_ok(cell.status):
            continue
        signature = cell.signature or matrix.messages[cell.message] or f"({cell.status})"
        by_signature.setdefault(signature, []).append((model_type, col, cell))
    groups = [
        FailureGroup(
            signature=signature,
            count=len(hits),
            statuses=tuple(sorted({c.status for _, _, c in hits}, key=rank)),
            columns=tuple(sorted({k.column for _, k, _ in hits}, key=column_order)),
            environments=tuple(e for e in matrix.environments if any(k.environment == e for _, k, _ in hits)),
            model_types=tuple(sorted({m for m, _, _ in hits})),
            expected=sum(1 for _, _, c in hits if c.expected),
        )
        for signature, hits in by_signature.items()
    ]
    groups.sort(key=lambda g: (-g.count, g.signature))
    return tuple(groups[:limit] if limit is not None else groups)


# The backend check's gates whose failure means vLLM never serves the type (its rows are
# `backend/<gate>`; the pipeline-parallel plan and the version floors stop nothing).
_STOPPING_GATES = ("backend/registry", "backend/build", "backend/enable-if", "backend/tp-plan", "backend/attention")


def unreachable(matrix: Matrix) -> dict[tuple[str, str], str]:
    """(environment, model type) -> the backend gate that stops vLLM's Transformers backend for
    it, as "column: status". The decorate cells of those types are verdicts no vLLM user can
    reach; the report keeps them and marks them."""
    found: dict[tuple[str, str], str] = {}
    columns = matrix.columns
    for row in matrix.rows:
        for column, cell in zip(columns, row.cells, strict=True):
            key = (column.environment, row.model_type)
            if cell is None or key in found or column.column not in _STOPPING_GATES:
                continue
            if not is_ok(cell.status) and cell.status != "skipped":
                found[key] = f"{column.column}: {cell.status}"
    return found
