"""The matrix's row filters in report.html: each engine's verdict, whose fault a finding is, and
where an engine stops a type (the causes of the "where types stop" tables, which filter the matrix
when clicked).

Pure: the matrix and the verdicts in, the choices the page offers out, each with the model types it
picks, so that the page's script only looks them up (the page's data, not an attribute per cell).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.fault import Fault
from auditor.core.outcome import Outcome
from auditor.report.matrix import Matrix
from auditor.report.serve import Headline, Serves, where_stopped

LABEL_CAUSE = 56  # characters of a cause in the filter's choices (the where-they-stop tables have it whole)


@dataclass(frozen=True)
class StopCause:
    """One cause an engine stops types with at one of its gates (or `undecided`), in one environment."""

    environment: str
    engine: str  # the engine's name (`vllm`)
    title: str  # the engine's title (`vLLM`)
    gate: str  # the gate's column, or `undecided`
    cause: str
    model_types: tuple[str, ...]

    def group(self, several: bool) -> str:
        """The choices' group it is listed in: `vLLM · backend/registry` (its environment first, with several)."""
        return f"{f'{self.environment}: ' if several else ''}{self.title} · {self.gate}"

    @property
    def label(self) -> str:
        """Its choice in the filter: the cause (cut at LABEL_CAUSE characters) and how many types."""
        cause = self.cause if len(self.cause) <= LABEL_CAUSE else self.cause[:LABEL_CAUSE - 1] + "…"
        return f"{cause} ({len(self.model_types)})"


@dataclass(frozen=True)
class VerdictChoice:
    """One engine's verdict filter: its position among the page's engines and its counts."""

    engine: int
    title: str
    counts: tuple[tuple[str, int], ...]  # (servable | stops | undecided, model types)


@dataclass(frozen=True)
class RowFilters:
    verdicts: tuple[VerdictChoice, ...]  # one environment only: the matrix has verdict columns then
    faults: tuple[tuple[str, int], ...]  # (fault, model types with a finding of that fault), Fault's order
    causes: tuple[StopCause, ...]

    def cause_groups(self, several: bool) -> list[tuple[str, list[tuple[int, StopCause]]]]:
        """The causes by group (engine and gate), in order, each with its position in `causes`."""
        groups: dict[str, list[tuple[int, StopCause]]] = {}
        for i, cause in enumerate(self.causes):
            groups.setdefault(cause.group(several), []).append((i, cause))
        return list(groups.items())

    def cause_id(self, environment: str, engine: str, gate: str, cause: str) -> int:
        """The position of a cause in `causes` (the page's `data.stops`)."""
        return next(i for i, c in enumerate(self.causes)
                    if (c.environment, c.engine, c.gate, c.cause) == (environment, engine, gate, cause))

    def stop_rows(self, matrix: Matrix) -> list[list[int]]:
        """Per cause, the matrix rows (their positions) of its model types: what the page's script reads."""
        position = {row.model_type: i for i, row in enumerate(matrix.rows)}
        return [[position[t] for t in c.model_types if t in position] for c in self.causes]


def row_filters(matrix: Matrix, found_headlines: Sequence[Headline]) -> RowFilters:
    """The choices of the matrix's row filters; `found_headlines`: auditor.report.serve.headlines."""
    causes = tuple(StopCause(h.environment, t.engine.name, t.engine.title, g.gate, cause, types)
                   for h in found_headlines for t in h.tallies for g in where_stopped(t) for cause, types in g.causes)
    verdicts = ()
    if len(matrix.groups) == 1 and found_headlines:
        verdicts = tuple(VerdictChoice(i, t.engine.title, ((str(Serves.SERVABLE), len(t.served)),
                                                            (str(Serves.STOPS), len(t.stopped)),
                                                            (str(Serves.UNDECIDED), len(t.undecided))))
                         for i, t in enumerate(found_headlines[0].tallies))
    return RowFilters(verdicts, _faults(matrix), causes)


def _faults(matrix: Matrix) -> tuple[tuple[str, int], ...]:
    types: dict[str, set[str]] = {}
    for model_type, _, cell in matrix.cells():
        if cell.outcome is Outcome.FINDING and cell.result.fault:
            types.setdefault(cell.result.fault, set()).add(model_type)
    return tuple((f.value, len(types[f.value])) for f in Fault if f.value in types)
