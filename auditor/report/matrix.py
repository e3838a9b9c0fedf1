"""The matrix of one or more runs: model types down, one column group per environment.

This is the one place that turns rows into cells; matrix.csv, the HTML report, the diff, the
nightly history, the drift of configs and the agreement of two policies all read cells from here.
A cell is an environment, a model type and a column (`Result.column`). It keeps every row that
claimed it, in the order read (runs in the order given, rows in file order): a resumed run that
repeated a type, overlapping shards, or two runs of one environment. **The first row read decides
the cell** (`deciding`), so a cell keeps its first verdict; the rows after it stay for whoever
judges from all of them: a sweep's reruns of a failure are such rows, and make the cell flaky when
one passed. What a cell means (pass, finding, expected, skipped, flaky) is the outcome rule of
auditor.core.outcome; a cell an expected baseline lists (auditor.report.baseline) is built with
`listed=True`.

Several runs of one environment merge into one group. A cell is marked as disagreeing when the
environments that have it gave it different statuses (an environment without it is not compared).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from auditor.core.outcome import CellVerdict, Outcome, judge
from auditor.core.results import RESULTS_FILE, Result, Run, RunInfo
from auditor.core.status import Status
from auditor.report.causes import cause_of


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


@dataclass(frozen=True, eq=False)
class Cell:
    """Every result that claimed one cell, in the order read; the first one decides it."""

    results: tuple[Result, ...]
    disagree: bool = False
    listed: bool = False  # an expected baseline lists its failure (status and signature)
    verdict: CellVerdict = field(init=False)  # the cell rule's (auditor.core.outcome.judge)
    by_baseline: bool = field(init=False)  # the baseline is what makes it `expected` (see `shown`)

    def __post_init__(self) -> None:
        # Derived once: reports read a cell's fields many times over.
        verdict = judge(self.results, expected=self.listed)
        object.__setattr__(self, "verdict", verdict)
        # The cell rule asked twice, with and without the baseline: where they differ, the
        # baseline relabelled the cell (a failure by design, or a flaky one, stays what it was).
        object.__setattr__(self, "by_baseline", self.listed and verdict.outcome is not judge(self.results).outcome)

    @property
    def result(self) -> Result:
        """The row that decides the cell."""
        return self.verdict.row

    @property
    def outcome(self) -> Outcome:
        return self.verdict.outcome

    @property
    def status(self) -> Status:
        return self.result.status

    @property
    def signature(self) -> str:
        return self.result.signature

    @property
    def message(self) -> str:
        return self.result.message

    @property
    def cause(self) -> str:
        """What reports group failures by (auditor.report.causes); `signature` stays the row's own."""
        return cause_of(self.result.message, self.result.signature)

    @property
    def seconds(self) -> float:
        return round(self.result.seconds, 3)

    @property
    def expected(self) -> bool:
        """Whether the cell fails by design (its outcome is `expected`)."""
        return self.outcome is Outcome.EXPECTED

    @property
    def shown(self) -> Status | str:
        """The status a report shows for the cell: its own, or `expected` where an expected
        baseline relabelled it (a view: the row keeps its status, and the report its title)."""
        return Outcome.EXPECTED.value if self.by_baseline else self.result.status


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
    baseline: str | None = None  # the expected baseline's file ("" unnamed); None: built without one

    @cached_property  # the page asks for it once per cell
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


def deciding(claims: Sequence[Result]) -> Result:
    """The result that decides a cell several rows claim (the cell rule's `row`)."""
    return judge(claims).row


def run_name(run: Run) -> str:
    """How reports name a run: its directory, or the file name of a loose results file."""
    return run.path.parent.name if run.path.name == RESULTS_FILE else run.path.name


def environment_infos(runs: Sequence[Run]) -> dict[str, RunInfo]:
    """Environment -> its RunInfo: the first run's, as a cell keeps its first row."""
    infos: dict[str, RunInfo] = {}
    for run in runs:
        infos.setdefault(run.info.environment, run.info)
    return infos


def cell_claims(runs: Sequence[Run]) -> dict[tuple[str, str, str], list[Result]]:
    """(environment, model type, column) -> every result that claimed the cell, in read order."""
    found: dict[tuple[str, str, str], list[Result]] = {}
    for run in runs:
        env = run.info.environment
        for r in run.results:
            found.setdefault((env, r.model_type, r.column), []).append(r)
    return found


def cell_results(runs: Sequence[Run]) -> dict[tuple[str, str, str], Result]:
    """(environment, model type, column) -> the result that decides that cell."""
    return {key: deciding(claims) for key, claims in cell_claims(runs).items()}


def run_cells(run: Run) -> dict[tuple[str, str], Result]:
    """(model type, column) -> the result that decides that cell in one run."""
    return {(model_type, column): r for (_, model_type, column), r in cell_results([run]).items()}


def cell_verdicts(runs: Sequence[Run]) -> dict[tuple[str, str, str], CellVerdict]:
    """(environment, model type, column) -> the cell rule's verdict on that cell."""
    return {key: judge(claims) for key, claims in cell_claims(runs).items()}


def run_verdicts(run: Run) -> dict[tuple[str, str], CellVerdict]:
    """(model type, column) -> the cell rule's verdict on that cell in one run."""
    return {(model_type, column): v for (_, model_type, column), v in cell_verdicts([run]).items()}


def build_matrix(runs: Sequence[Run], listed: Callable[[str, str, str, str], bool] | None = None,
                 baseline: str | None = None) -> Matrix:
    """`listed(model_type, column, status, signature)`: whether an expected baseline lists a
    cell's failure (auditor.report.baseline), which makes it `expected`; `baseline`: its name."""
    found = cell_claims(runs)
    environments = list(dict.fromkeys(run.info.environment for run in runs))
    infos = environment_infos(runs)
    groups = tuple(
        Group(env, tuple(Column(env, c) for c in sorted({k[2] for k in found if k[0] == env},
                                                        key=engine_column_order(infos[env].engines))))
        for env in environments
    )
    columns = [c for g in groups for c in g.columns]
    statuses_by_column: dict[tuple[str, str], set[Status]] = {}
    for (_, model_type, column), claims in found.items():
        statuses_by_column.setdefault((model_type, column), set()).add(deciding(claims).status)
    rows = []
    for model_type in sorted({k[1] for k in found}):
        cells = []
        for col in columns:
            claims = found.get((col.environment, model_type, col.column))
            disagree = claims is not None and len(statuses_by_column[(model_type, col.column)]) > 1
            cells.append(None if claims is None else Cell(tuple(claims), disagree, _listed(listed, claims[0])))
        rows.append(Row(model_type, tuple(cells)))
    return Matrix(groups=groups, rows=tuple(rows), baseline=baseline)


def _listed(listed, first: Result) -> bool:
    return listed is not None and not first.status.ok and listed(first.model_type, first.column, first.status.value,
                                                                 first.signature)


def column_order(column: str) -> tuple[bool, str]:
    """`build` first, the rest by name: the order of matrix.csv."""
    return (column != "build", column)


def engine_column_order(engines) -> Callable[[str], tuple]:
    """The matrix's column order: `build` first, then by check; a check's columns of a serving
    engine's gates (`backend/<gate>[/<policy>]`) in that engine's order, engines in the order the
    run recorded them (auditor.core.engineinfo), the rest by name."""
    position = {f"backend/{gate}": (e, g) for e, engine in enumerate(engines) for g, gate in enumerate(engine.gates)}
    last = (len(engines), 0)

    def key(column: str) -> tuple:
        place = next((pos for prefix, pos in position.items() if column == prefix or column.startswith(prefix + "/")),
                     last)
        return (column != "build", column.split("/", 1)[0], place, column)

    return key
