"""The matrix of one or more runs: model types down, one column group per environment.

This is the one place that turns rows into cells; matrix.csv, the HTML report, the diff, the
nightly history and the agreement of two policies all read cells from here. A cell is an
environment, a model type and a column (`Result.column`). **When several rows claim one cell,
the first one read wins** (runs in the order given, rows in file order): a resumed run that
repeated a type, overlapping shards, or two runs of one environment keep their first verdict.

Several runs of one environment merge into one group. A cell is marked as disagreeing when the
environments that have it gave it different statuses (an environment without it is not compared).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.results import RESULTS_FILE, Result, Run


@dataclass(frozen=True)
class Column:
    environment: str
    column: str

    @property
    def key(self) -> str:
        return f"{self.environment} | {self.column}"


@dataclass(frozen=True)
class Group:
    environment: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Cell:
    status: str
    signature: str
    message: int  # index into Matrix.messages
    seconds: float
    disagree: bool
    expected: bool = False  # a failure by design (the by-reference pickle of remote code)


@dataclass(frozen=True)
class Row:
    model_type: str
    cells: tuple[Cell | None, ...]  # aligned with Matrix.columns

    @property
    def disagree(self) -> bool:
        return any(c is not None and c.disagree for c in self.cells)


@dataclass(frozen=True)
class Matrix:
    groups: tuple[Group, ...]
    rows: tuple[Row, ...]
    messages: tuple[str, ...]

    @property
    def columns(self) -> tuple[Column, ...]:
        return tuple(c for g in self.groups for c in g.columns)

    @property
    def environments(self) -> tuple[str, ...]:
        return tuple(g.environment for g in self.groups)

    def cells(self) -> list[tuple[str, Column, Cell]]:
        """Every present cell with its model type and column."""
        columns = self.columns
        return [(row.model_type, col, cell) for row in self.rows
                for col, cell in zip(columns, row.cells, strict=True) if cell is not None]


def run_name(run: Run) -> str:
    """How reports name a run: its directory, or the file name of a loose results file."""
    return run.path.parent.name if run.path.name == RESULTS_FILE else run.path.name


def cell_results(runs: Sequence[Run]) -> dict[tuple[str, str, str], Result]:
    """(environment, model type, column) -> the result of that cell: the first one read."""
    found: dict[tuple[str, str, str], Result] = {}
    for run in runs:
        env = run.info.environment
        for r in run.results:
            found.setdefault((env, r.model_type, r.column), r)
    return found


def run_cells(run: Run) -> dict[tuple[str, str], Result]:
    """(model type, column) -> the result of that cell in one run."""
    return {(model_type, column): r for (_, model_type, column), r in cell_results([run]).items()}


def build_matrix(runs: Sequence[Run]) -> Matrix:
    found = cell_results(runs)
    environments = list(dict.fromkeys(run.info.environment for run in runs))
    groups = tuple(
        Group(env, tuple(Column(env, c) for c in sorted({k[2] for k in found if k[0] == env}, key=column_order)))
        for env in environments
    )
    columns = [c for g in groups for c in g.columns]
    statuses_by_column: dict[tuple[str, str], set[str]] = {}
    for (_, model_type, column), r in found.items():
        statuses_by_column.setdefault((model_type, column), set()).add(r.status.value)

    messages: dict[str, int] = {}
    rows = []
    for model_type in sorted({k[1] for k in found}):
        cells = []
        for col in columns:
            r = found.get((col.environment, model_type, col.column))
            if r is None:
                cells.append(None)
                continue
            cells.append(Cell(
                status=r.status.value,
                signature=r.signature,
                message=messages.setdefault(r.message, len(messages)),
                seconds=round(r.seconds, 3),
                disagree=len(statuses_by_column[(model_type, col.column)]) > 1,
                expected=r.extras.get("expected") is True,
            ))
        rows.append(Row(model_type, tuple(cells)))
    return Matrix(groups=groups, rows=tuple(rows), messages=tuple(messages))


def column_order(column: str) -> tuple[bool, str]:
    """`build` first, the rest by name: the order of matrix.csv."""
    return (column != "build", column)
