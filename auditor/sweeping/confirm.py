"""The confirm step: failures the machine can cause are rerun before they are reported.

After the sweep's own pass, the cells whose first row failed with a status the machine can cause
(auditor.core.outcome.UNCONFIRMED: timeout, oom, crash, compile-error, mismatch, device-error) run again, their
model types in fresh workers (each `executor.run` starts workers of its own: the pool new
processes, Ray new tasks), up to `--reruns` times, until one passes. A rerun's rows for those cells
are marked with their attempt (`extras["rerun"]`) and appended as a unit of their own; the rerun's
other rows are left out (their cells were decided). A type whose cell went over a worker's memory
(`oom`; --max-memory auto shares 80% of the machine's memory between the jobs) is rerun alone, one
at a time, under a single job's limit (`run_alone`): vLLM's Transformers backend allocates a MoE's
unfused experts on the CPU whatever the load device (16.7 GB for jetmoe), over the 9.4 GB share of
two jobs on a 23 GB machine, and that rerun decides the cell (core/outcome.ALONE_KEY). Otherwise the
first row still decides each cell; the outcome rule reads the flaky label from the rows after it.

What is left to rerun is read from results.jsonl itself, so a sweep killed mid-rerun loses at
most the unit being written, and `--resume` reruns what was not confirmed yet.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from auditor.core.outcome import ALONE_KEY, RERUN_KEY, judge
from auditor.core.results import Result, read_run
from auditor.core.status import Status
from auditor.core.writing import ResultsWriter
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
        results = read_run(path).results
        todo = [p for p in pending(results, reruns) if p.model_type in by_name]
        if not todo:
            break
        cells = sum(len(p.attempts) for p in todo)
        events.note(f"Rerunning {cells} cell{'s' if cells != 1 else ''} of {len(todo)} model type"
                    f"{'s' if len(todo) != 1 else ''} that failed with a status the machine can cause, "
                    "in fresh workers: " + ", ".join(p.model_type for p in todo[:10])
                    + (" ..." if len(todo) > 10 else ""))
        attempts = {p.model_type: p.attempts for p in todo}
        # Only where a worker alone gets more memory than a job's share (the pool under --max-memory auto
        # with jobs > 1); elsewhere (a size given, one job, Ray placing tasks) an oom is rerun as any other.
        run_alone = executor.run_alone if getattr(executor, "more_memory_alone", False) else None
        over = _over_memory(results, todo) if run_alone is not None else set()
        if over:
            events.note(f"{len(over)} of them went out of memory under a job's share (--max-memory auto): rerun alone, "
                        "one at a time, with 80% of the machine's memory: " + ", ".join(sorted(over)[:10]))
        shared = [by_name[p.model_type] for p in todo if p.model_type not in over]
        alone = [by_name[p.model_type] for p in todo if p.model_type in over]
        for batch in itertools.chain(executor.run(shared) if shared else (), run_alone(alone) if alone else ()):
            rows = _marked(batch, attempts, alone=batch[0].model_type in over if batch else False)
            if rows:
                writer.write_type(rows[0].model_type, rows)
                written += len(rows)
    return written


def _over_memory(results: Sequence[Result], todo: Sequence[Pending]) -> set[str]:
    """The model types of `todo` whose cell to confirm was decided by an `oom` row."""
    cells = {key for p in todo for key in p.attempts}
    return {row.model_type for row in results if row.status is Status.OOM and _key(row) in cells}


def _marked(batch: list[Result], attempts: dict[str, dict[CellKey, int]], alone: bool = False) -> list[Result]:
    """The rows of a rerun's batch for the cells being confirmed, each marked with its attempt
    (and as run alone, ALONE_KEY, where it was)."""
    rows = []
    for row in batch:
        attempt = attempts.get(row.model_type, {}).get(_key(row))
        if attempt is not None:
            rows.append(replace(row, extras={**row.extras, RERUN_KEY: attempt, **({ALONE_KEY: True} if alone else {})}))
    return rows


def _key(row: Result) -> CellKey:
    return (row.model_type, row.check, row.component, row.policy)
