"""The nightly history: run directories of a reports folder, each against the night before, and
a timeline of every cell that changed in the window (auditor.report.timeline)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from auditor.core.results import Run
from auditor.report import templating
from auditor.report.charts import vertical_bars
from auditor.report.diff import RunDiff, diff_runs
from auditor.report.files import DIFF_FILES, REPORT_FILES
from auditor.report.matrix import run_cells, run_name
from auditor.report.statuses import legend
from auditor.report.summary import Counts
from auditor.report.timeline import CellTimeline, timelines

REPORT_FILE = REPORT_FILES[0]  # report.html
DIFF_FILE = DIFF_FILES[1]  # diff.html


@dataclass(frozen=True)
class Night:
    name: str  # the run directory's name, relative to the reports folder
    started: str
    environment: str
    model_types: int
    counts: Counts
    diff: RunDiff | None  # against the night before, None for the first
    python: str = ""
    torch: str = ""
    transformers: str = ""
    engines: tuple[tuple[str, str], ...] = ()  # (engine, version), from the run's header

    @property
    def report_link(self) -> str:
        return f"{quote(self.name)}/{REPORT_FILE}"

    @property
    def diff_link(self) -> str:
        return f"{quote(self.name)}/{DIFF_FILE}"


@dataclass(frozen=True)
class History:
    nights: tuple[Night, ...]  # oldest first
    runs: tuple[Run, ...]  # aligned with nights
    cells: tuple[CellTimeline, ...] = ()  # every cell that changed in the window

    @property
    def flaky(self) -> tuple[CellTimeline, ...]:
        return tuple(cell for cell in self.cells if cell.flaky)

    @property
    def newest_first(self) -> tuple[Night, ...]:
        return tuple(reversed(self.nights))

    def consecutive(self) -> list[tuple[Run, RunDiff]]:
        """Each later run with its diff against the previous one: the diff files to write."""
        return [(run, night.diff) for run, night in zip(self.runs, self.nights, strict=True) if night.diff is not None]


def build_history(runs: Sequence[Run]) -> History:
    ordered = sorted(runs, key=lambda r: (r.info.started, r.path.parent.name))
    nights = []
    for i, run in enumerate(ordered):
        cells = {key: r.status.value for key, r in run_cells(run).items()}
        nights.append(Night(
            name=run_name(run),
            started=run.info.started,
            environment=run.info.environment,
            model_types=len({m for m, _ in cells}),
            counts=Counts.of(cells.values()),
            diff=diff_runs(ordered[i - 1], run) if i else None,
            python=run.info.python, torch=run.info.torch, transformers=run.info.transformers,
            engines=tuple(sorted((engine.name, engine.version) for engine in run.info.engines)),
        ))
    return History(nights=tuple(nights), runs=tuple(ordered), cells=timelines(ordered))


def render_history(history: History, skipped: Sequence[tuple[str, str]] = (),
                   title: str = "Nightly sweeps") -> str:
    """index.html of a reports folder; `skipped` lists (directory, reason) that could not be read."""
    statuses = {s for n in history.nights for s, _ in n.counts.items}
    chart = vertical_bars([(n.name, n.counts) for n in history.nights], "Status counts per night")
    return templating.render(
        "history.html.j2", title=title, history=history, nights=history.newest_first,
        legend=legend(statuses), styles={s.name: s for s in legend(statuses)}, chart=chart,
        skipped=list(skipped),
    )
