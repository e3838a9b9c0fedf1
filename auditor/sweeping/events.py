"""What a sweep tells as it goes (SweepEvents) and what it returns (SweepOutcome)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from auditor.core.results import RESULTS_FILE, Result, Run
from auditor.sweeping.validate import WORKER_LOG


class SweepEvents:
    """What a sweep tells as it goes. The default tells nothing; the CLI prints. Subclass it and
    override what you want."""

    def note(self, text: str) -> None:
        """Something a person running the sweep should know (a repaired file, a cluster starting)."""

    def started(self, total: int) -> None:
        """The model types to run are known: `total` of them."""

    def finished_type(self, model_type: str, rows: list[Result]) -> None:
        """One model type's rows were written."""

    def ended(self) -> None:
        """The workers are done or stopped (called before the tables are written)."""


@dataclass(frozen=True)
class SweepOutcome:
    """A finished sweep: its run as written (every row, resumed ones too), where its files are,
    how much this call ran, and what the `fail_on` rules matched."""

    run: Run
    outdir: Path
    files: tuple[Path, ...]
    done: int  # model types this call ran
    total: int  # model types this call had to run (a resume skips the ones done before)
    seconds: float
    gate_hits: tuple = ()  # auditor.report.gate.GateHit, one per cell a fail_on rule matched

    @property
    def results_path(self) -> Path:
        return self.outdir / RESULTS_FILE

    @property
    def worker_log(self) -> Path | None:
        """workers.log when the workers wrote anything (transformers warnings, crash tracebacks)."""
        log = self.outdir / WORKER_LOG
        return log if log.exists() and log.stat().st_size else None
