"""`--fail-on`: the cells a CI job gates on.

A rule is `STATUS` (any column) or `COLUMN_GLOB=STATUS` (columns matching a shell-style glob,
e.g. `decorate/*/legacy=refused`); one `--fail-on` takes several, comma-separated, and the
flag repeats. A cell matches a rule when its column matches and its status is the rule's.
Failures that are expected by design (the by-reference pickle of remote code, labelled in the
report) never match: they fail for every model type, and a gate on them could never pass. Nor
do flaky cells (a rerun passed: not confirmed) or failures an expected baseline lists: the gate
fails on confirmed, unexpected failures only.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.core.errors import InputError
from auditor.core.outcome import Outcome
from auditor.core.status import Status
from auditor.report.matrix import Matrix


@dataclass(frozen=True)
class FailOn:
    status: str
    columns: str = "*"  # a shell-style glob over matrix columns

    def matches(self, column: str, status: str) -> bool:
        return status == self.status and fnmatch.fnmatchcase(column, self.columns)

    def __str__(self) -> str:
        return self.status if self.columns == "*" else f"{self.columns}={self.status}"


@dataclass(frozen=True)
class GateHit:
    environment: str
    model_type: str
    column: str
    status: str
    rule: FailOn


def parse_fail_on(values: Iterable[str]) -> tuple[FailOn, ...]:
    """The rules of `--fail-on` values; InputError naming the valid statuses otherwise."""
    rules = []
    for value in values:
        for item in (part.strip() for part in value.split(",")):
            if not item:
                continue
            columns, _, status = item.rpartition("=")
            columns = columns.strip() or "*"
            status = status.strip()
            if status not in _STATUSES:
                raise InputError(f"--fail-on {item!r}: {status!r} is not a status; one of: {', '.join(_STATUSES)}")
            if Status(status).ok:
                raise InputError(f"--fail-on {item!r}: {status!r} is a pass; gate on failing statuses only")
            rules.append(FailOn(status, columns))
    return tuple(dict.fromkeys(rules))


def gate_hits(matrix: Matrix, rules: Iterable[FailOn]) -> tuple[GateHit, ...]:
    """Every cell that some rule matches (the first rule that matches names it), in matrix order."""
    rules = tuple(rules)
    hits = []
    for model_type, col, cell in matrix.cells():
        if cell.outcome in (Outcome.EXPECTED, Outcome.FLAKY):
            continue
        rule = next((r for r in rules if r.matches(col.column, cell.status)), None)
        if rule is not None:
            hits.append(GateHit(col.environment, model_type, col.column, cell.status, rule))
    return tuple(hits)


def describe_hits(hits: tuple[GateHit, ...], limit: int = 10) -> str:
    """`--fail-on refused: 2 cells: t5gemma2 decorate/decoder/legacy (refused), ...`."""
    rules = ", ".join(dict.fromkeys(str(h.rule) for h in hits))
    shown = ", ".join(f"{h.model_type} {h.column} ({h.status})" for h in hits[:limit])
    more = f" and {len(hits) - limit} more" if len(hits) > limit else ""
    return f"--fail-on {rules}: {len(hits)} cell{'s' if len(hits) != 1 else ''} matched: {shown}{more}"


_STATUSES = tuple(s.value for s in Status)
