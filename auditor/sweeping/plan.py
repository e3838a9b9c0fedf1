"""A validated sweep: what every step after validation works from, made once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # kept out of import time: the CLI's parser imports the sweep's modules
    from auditor.checks import Check, Options
    from auditor.core.results import Run
    from auditor.executors.pool import PoolSettings
    from auditor.sweeping.options import SweepRequest


@dataclass(frozen=True)
class SweepPlan:
    """A request as it will run: its defaults resolved (device, backend, the checks and policies
    as lists), the check objects it selected, what the workers receive, and the run directory.
    The steps read the selected checks from here rather than looking them up again."""

    request: SweepRequest  # with device, backend, checks and policies resolved
    checks: tuple[Check, ...]  # the selected checks, resolved once
    options: Options  # what the checks need to know, sent to every worker
    settings: PoolSettings  # the local pool's limits
    outdir: Path
    against: Run | None = None  # --against's run, read before any work

    @property
    def runs_models(self) -> bool:
        """Whether a selected check builds real models on --device (the header records that device)."""
        return any(check.runs_models for check in self.checks)

    @property
    def executor_name(self) -> str:
        return "worker pool" if self.request.executor == "local" else "Ray executor"
