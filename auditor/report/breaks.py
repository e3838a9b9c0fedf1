"""Graph breaks grouped by the line they happen at, across model types.

A `graph-break` cell of the compile check lists every break of its component (auditor.core.extras:
`breaks_of`), each at a user frame with an owner. Many model types share code (transformers'
`masking_utils`, `integrations/`, a copied attention function), so one line can break many of
them: grouped by that line, the report shows a maintainer the one fix that unblocks N types. A
break without a frame (an old row, a break dynamo could not place) is grouped by its reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from auditor.core.extras import BreakOwner, GraphBreak, breaks_of
from auditor.core.status import Status
from auditor.report.matrix import Matrix, column_order


@dataclass(frozen=True)
class BreakGroup:
    """The model types whose compiled components break at one line (or for one reason, where the
    break has no line), with the reason most of them give there."""

    file: str
    line: int | None
    function: str
    owner: BreakOwner | None
    reason: str
    model_types: tuple[str, ...]
    columns: tuple[str, ...]
    environments: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.model_types)

    @property
    def where(self) -> str:
        """`file:line`, or a note for a break without a frame."""
        return f"{self.file}:{self.line}" if self.file else "(no frame)"

    def text(self) -> str:
        """`3 types break at transformers/masking_utils.py:40 (transformers): <reason>`."""
        owner = f" ({self.owner})" if self.owner else ""
        verb = "types break" if self.count != 1 else "type breaks"
        return f"{self.count} {verb} at {self.where}{owner}: {self.reason}"


def break_groups(matrix: Matrix) -> tuple[BreakGroup, ...]:
    """Every line some `graph-break` cell breaks at, with the types that break there, most types
    first (then by owner and place). A type counts once per line, whatever its columns and
    environments; a cell counts a line once, however often its component meets it."""
    hits: dict[tuple, list[tuple[str, str, str, GraphBreak]]] = {}
    for model_type, col, cell in matrix.cells():
        if cell.status is not Status.GRAPH_BREAK:
            continue
        places: dict[tuple, GraphBreak] = {}
        for record in breaks_of(cell.result.extras):
            places.setdefault(_key(record), record)
        for key, record in places.items():
            hits.setdefault(key, []).append((model_type, col.column, col.environment, record))
    groups = [_group(matrix, found) for found in hits.values()]
    groups.sort(key=lambda g: (-g.count, str(g.owner or ""), g.where, g.reason))
    return tuple(groups)


def _key(record: GraphBreak) -> tuple:
    """What groups a break: its place; its reason, for a break without one."""
    return ("at", record.file, record.line) if record.file else ("reason", record.reason)


def _group(matrix: Matrix, found: list[tuple[str, str, str, GraphBreak]]) -> BreakGroup:
    first = found[0][3]
    reasons = Counter(record.reason for *_, record in found)
    return BreakGroup(
        file=first.file, line=first.line, function=first.function, owner=first.owner,
        reason=reasons.most_common(1)[0][0],
        model_types=tuple(sorted({model_type for model_type, *_ in found})),
        columns=tuple(sorted({column for _, column, _, _ in found}, key=column_order)),
        environments=tuple(e for e in matrix.environments if any(env == e for _, _, env, _ in found)),
    )
