"""The rows of a model type whose worker died (crash, timeout, oom), whichever executor ran it."""

from __future__ import annotations

from dataclasses import replace

from auditor import checks
from auditor.checks import Options
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.executors.protocol import TypeProgress
from auditor.models.cases import ModelCase


def death_rows(case: ModelCase, options: Options, progress: TypeProgress, status: Status, message: str, *,
               seconds: float, worker: str) -> list[Result]:
    """The rows a model type gets when its worker died (crash, timeout, oom): the check that was
    running (`progress.check`) and every check after it report the death, in the cells they
    would have filled; cells already received keep their result. The first row carries the
    `seconds` spent.

    Shared by every executor, so a death looks the same whichever one ran the model type."""
    failure = Failure.because(status, message)
    have = {(r.check, r.component, r.policy) for r in progress.results}
    names = options.checks
    first = names.index(progress.check) if progress.check in names else 0
    rows = []
    for name in names[first:]:
        for row in checks.get(name).failed_rows(case, options, failure):
            if (row.check, row.component, row.policy) not in have:
                rows.append(replace(row, seconds=seconds, worker=worker))
                seconds = 0.0
    return rows
