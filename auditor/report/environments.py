"""How the environments of a merged report differ, so that a difference between them is never
put down to the wrong variable: a matrix labelled `py3.10`, `py3.11` whose Pythons also had
different transformers would blame Python for a transformers change. Pure functions.

`differences(runs)` lists each field of `VARIABLES` whose values differ between environments;
the report shows it above the matrix, under each column group's name and next to the
"environments disagree" view, and `side_by_side(matrix)` puts each column's counts in every
environment in one row, marking the columns whose counts differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.results import Run
from auditor.report.matrix import Matrix, column_order, environment_infos
from auditor.report.summary import Counts

# The fields of RunInfo that decide what a cell means, as people name them.
VARIABLES = (("Python", "python"), ("transformers", "transformers"), ("torch", "torch"),
             ("serving engines", "engine_versions"),
             ("platform", "platform"), ("device", "device"), ("compile semantics", "compile_semantics"))


@dataclass(frozen=True)
class Difference:
    variable: str  # "Python", "transformers", ...
    values: tuple[tuple[str, str], ...]  # (environment, value), in environment order


@dataclass(frozen=True)
class SideBySide:
    column: str
    counts: tuple[Counts | None, ...]  # per environment, in matrix order; None: the column is absent there
    differ: bool  # the environments that have the column count its statuses differently


def differences(runs: Sequence[Run]) -> tuple[Difference, ...]:
    """The variables whose values differ between the environments (one value per environment:
    the first run's, as the matrix keeps the first row)."""
    infos = environment_infos(runs)
    found = []
    for name, field in VARIABLES:
        values = tuple((env, str(getattr(info, field))) for env, info in infos.items())
        if len({value for _, value in values}) > 1:
            found.append(Difference(name, values))
    return tuple(found)


def sentence(found: Sequence[Difference]) -> str:
    """`Python (3.10.13, 3.11.7) and transformers (5.20.2, 5.24.0)`."""
    parts = [f"{d.variable} ({', '.join(dict.fromkeys(v for _, v in d.values))})" for d in found]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] if parts else ""


def group_labels(found: Sequence[Difference]) -> dict[str, str]:
    """Environment -> what sets it apart, for its column-group header: `Python 3.10.13 ·
    transformers 5.20.2` (empty when the environments differ in nothing those fields hold)."""
    labels: dict[str, list[str]] = {}
    for d in found:
        for env, value in d.values:
            labels.setdefault(env, []).append(f"{d.variable} {value}")
    return {env: " · ".join(parts) for env, parts in labels.items()}


def side_by_side(matrix: Matrix) -> tuple[SideBySide, ...]:
    """One row per column: its status counts in each environment."""
    by_key: dict[tuple[str, str], list[str]] = {}
    for _, col, cell in matrix.cells():
        by_key.setdefault((col.environment, col.column), []).append(cell.shown)
    names = list(dict.fromkeys(col.column for col in matrix.columns))
    rows = []
    for name in sorted(names, key=column_order):
        counts = tuple(Counts.of(by_key[(env, name)]) if (env, name) in by_key else None
                       for env in matrix.environments)
        present = {c.items for c in counts if c is not None}
        rows.append(SideBySide(name, counts, len(present) > 1))
    return tuple(rows)
