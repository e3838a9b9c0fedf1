"""The confirm step: failures the machine can cause are rerun before they are reported.

After the sweep's own pass, the cells whose first row failed with a status the machine can cause
(auditor.core.outcome.UNCONFIRMED: timeout, oom, crash, compile-error, mismatch) run again, their
model types in fresh workers (each `executor.run` starts workers of its own: the pool new
processes, Ray new tasks), up to `--reruns` times, until one passes. A rerun's rows for those cells
are marked with their attempt (`extras["rerun"]`) and appended as a unit of their own; the rerun's
other rows are left out (their cells were decided). The first row still decides each cell; the
outcome rule reads the flaky label from the rows after it.

What is left to rerun is read from results.jsonl itself, so a sweep killed mid-rerun loses at
most the unit being written, and `--resume` reruns what was not confirmed yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from auditor.core.outcome import RERUN_KEY, judge
from auditor.core.results import Result, ResultsWriter, read_run
from auditor.models.cases import ModelCase
from auditor.sweeping.events import SweepEvents

CellKey = tuple[str, str, str, str]  # model type, check, component, policy


@dataclass(frozen=True)
class Pending:
    """The cells of one model type still to confirm, each with the attempt its next rerun is."""

    model_type: str
    attempts: dict[CellKey, int]


def pending(results: Sequence[Result], reruns: int) -> list[Pending]:
    """The model types with cells to rerun: cells the cell rule calls unconfirmed (a deciding row
    that needs confirming, no rerun that passed) with fewer than `reruns` rerun rows so far. In the
    order the types were first written."""
    claims: dict[CellKey, list[Result]] = {}
    for row in results:
        claims.setdefault(_key(row), []).append(row)
    by_type: dict[str, dict[CellKey, int]] = {}
    for key, rows in claims.items():
        verdict = judge(rows)
        if verdict.unconfirmed and len(verdict.reruns) < reruns:
            by_type.setdefault(key[0], {})[key] = len(verdict.reruns) + 1
    return [Pending(model_type, attempts) for model_type, attempts in by_type.items()]


def confirm(executor, cases: Sequence[ModelCase], path: Path, writer: ResultsWriter, reruns: int,
            events: SweepEvents) -> int:
    """Rerun what `path` holds unconfirmed, round after round, appending through `writer`; how
    many rerun rows were written. At most `reruns` rounds: a cell a rerun left without a row (its
    type no longer selected, a check that wrote nothing) is not retried forever."""
    by_name = {case.model_type: case for case in cases}
    written = 0
    for _ in range(reruns):
        todo = [p for p in pending(read_run(path).results, reruns) if p.model_type in by_name]
        if not todo:
            break
        cells = sum(len(p.attempts) for p in todo)
        events.note(f"Rerunning {cells} cell{'s' if cells != 1 else ''} of {len(todo)} model type"
                    f"{'s' if len(todo) != 1 else ''} that failed with a status the machine can cause, "
                    "in fresh workers: " + ", ".join(p.model_type for p in todo[:10])
                    + (" ..." if len(todo) > 10 else ""))
        attempts = {p.model_type: p.attempts for p in todo}
        for batch in executor.run([by_name[p.model_type] for p in todo]):
            rows = _marked(batch, attempts)
            if rows:
                writer.write_type(rows[0].model_type, rows)
                written += len(rows)
    return written


def _marked(batch: list[Result], attempts: dict[str, dict[CellKey, int]]) -> list[Result]:
    """The rows of a rerun's batch for the cells being confirmed, each marked with its attempt."""
    rows = []
    for row in batch:
        attempt = attempts.get(row.model_type, {}).get(_key(row))
        if attempt is not None:
            rows.append(replace(row, extras={**row.extras, RERUN_KEY: attempt}))
    return rows


def _key(row: Result) -> CellKey:
    return (row.model_type, row.check, row.component, row.policy)
