"""What a sweep tells as it goes (SweepEvents) and what it returns (SweepOutcome)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.core.results import RESULTS_FILE, Result, Run
from auditor.sweeping.validate import WORKER_LOG

if TYPE_CHECKING:
    from auditor.report.files import Earlier


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
    # The run report.html and summary.md say what changed since (--against, or the newest of the
    # same environment before it in the reports folder), and the siblings that could not be read.
    earlier: Earlier | None = None
    engine_runs: tuple[Run, ...] = ()  # the runs of `--engine`'s venvs (OUTPUT/engines/*), in its order

    @property
    def previous(self) -> Run | None:
        """The earlier run the reports were compared with; None when there was none."""
        return self.earlier.run if self.earlier is not None else None

    @property
    def results_path(self) -> Path:
        return self.outdir / RESULTS_FILE

    @property
    def worker_log(self) -> Path | None:
        """workers.log when the workers wrote anything (transformers warnings, crash tracebacks)."""
        log = self.outdir / WORKER_LOG
        return log if log.exists() and log.stat().st_size else None
