"""The HTML report of one or more runs: a pure function from runs to one self-contained page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.outcome import Outcome
from auditor.core.results import Run, RunInfo
from auditor.report import templating
from auditor.report.baseline import Baseline, expected_matrix
from auditor.report.breaks import break_groups
from auditor.report.charts import horizontal_bars
from auditor.report.environments import differences, group_labels, sentence, side_by_side
from auditor.report.matrix import run_name
from auditor.report.ranges import release_ranges
from auditor.report.serve import headlines, unreachable, verdicts
from auditor.report.shards import shard_coverage
from auditor.report.statuses import legend
from auditor.report.summary import (
    Counts,
    column_summaries,
    counted_apart,
    environment_counts,
    expected_label,
    failure_groups,
    findings,
    tally,
)

FAILURES_SHOWN = 30
BREAKS_SHOWN = 30  # lines that graph breaks happen at, most model types first
RANGES_SHOWN = 500  # pass-range rows in the page; minmax.csv (auditor versions) has them all


@dataclass(frozen=True)
class RunView:
    """One input run as the environments table shows it."""

    name: str
    info: RunInfo
    results: int


def run_view(run: Run) -> RunView:
    return RunView(name=run_name(run), info=run.info, results=len(run.results))


def render_report(runs: Sequence[Run], title: str = "Model sweep report", expected: Baseline | None = None) -> str:
    """`expected`: an expected baseline; the failures it lists show as `expected`, their own
    status in the cell's title (a view: the rows are what they are)."""
    matrix = expected_matrix(runs, expected)
    cells = matrix.cells()
    differ = differences(runs)
    present = legend(c.shown for _, _, c in cells)
    # The table of failures lists findings only; skipped and expected cells are counted apart.
    all_failures = failure_groups(matrix, limit=None, outcomes=frozenset({Outcome.FINDING}))
    messages = _message_ids(cells)
    breaks = break_groups(matrix)
    columns = matrix.columns
    marked = unreachable(runs)
    context = dict(
        title=title,
        runs=[run_view(r) for r in runs],
        missing_shards=[c for c in shard_coverage(runs) if c.missing],
        matrix=matrix,
        several=len(matrix.groups) > 1,
        total_cells=len(cells),
        tally=tally(matrix),
        legend=present,
        styles={s.name: s for s in present},
        legend_index={s.name: i for i, s in enumerate(present)},
        status_totals=dict(Counts.of(c.shown for _, _, c in cells).items),
        relabel=expected_label(matrix.baseline),
        summaries=column_summaries(matrix),
        pass_ranges=_pass_ranges(runs),
        side_by_side=side_by_side(matrix) if len(matrix.groups) > 1 else (),
        differences=differ,
        differ_in=sentence(differ),
        group_labels=group_labels(differ),
        findings=findings(matrix),
        serve_headlines=headlines(verdicts(runs)),
        unreachable=marked,
        unreachable_types=sorted({model_type for _, model_type in marked}),
        env_chart=horizontal_bars(environment_counts(matrix), "Status counts per environment"),
        failures=all_failures[:FAILURES_SHOWN],
        more_failures=max(0, len(all_failures) - FAILURES_SHOWN),
        apart=counted_apart(matrix),
        graph_breaks=breaks[:BREAKS_SHOWN],
        more_breaks=max(0, len(breaks) - BREAKS_SHOWN),
        message_ids=messages,
        column_index={c.key: i for i, c in enumerate(columns)},
        group_of={c.key: gi for gi, g in enumerate(matrix.groups) for c in g.columns},
        data={
            "messages": list(messages),
            "columns": [{"environment": c.environment, "column": c.column} for c in columns],
            "order": [s.name for s in present],
            "ok": [s.name for s in present if s.ok],
        },
    )
    return templating.render("report.html.j2", **context)


def _message_ids(cells) -> dict[str, int]:
    """Each distinct message -> its index in the page's data, so that a message many cells share
    is in the page once (the detail pane looks it up)."""
    ids: dict[str, int] = {}
    for _, _, cell in cells:
        ids.setdefault(cell.message, len(ids))
    return ids


def _pass_ranges(runs: Sequence[Run]) -> dict | None:
    """The min/max table of runs under two or more transformers releases: the cells that do not
    pass in every release that has them (the unbroken ones are only counted)."""
    found = release_ranges(runs)
    if found is None:
        return None
    releases, ranges = found
    broken = [r for r in ranges if not r.unbroken]
    return {"releases": releases, "rows": broken[:RANGES_SHOWN], "more": max(0, len(broken) - RANGES_SHOWN),
            "unbroken": len(ranges) - len(broken), "total": len(ranges)}
