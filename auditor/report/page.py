"""The HTML report of one or more runs: a pure function from runs to one self-contained page."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from auditor.core.fault import Fault
from auditor.core.outcome import Outcome
from auditor.core.results import Run, RunInfo
from auditor.report import templating
from auditor.report.baseline import Baseline, expected_matrix
from auditor.report.breaks import break_groups
from auditor.report.charts import horizontal_bars
from auditor.report.environments import differences, group_labels, sentence, side_by_side
from auditor.report.filters import row_filters
from auditor.report.matrix import run_name
from auditor.report.ranges import release_ranges
from auditor.report.serve import Serves, headlines, unreachable, verdicts, where_stopped
from auditor.report.shards import shard_coverage
from auditor.report.since import SHOWN as SINCE_SHOWN
from auditor.report.since import since
from auditor.report.statuses import legend
from auditor.report.summary import (
    Counts,
    auditor_errors,
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


def render_report(runs: Sequence[Run], title: str = "Model sweep report", expected: Baseline | None = None,
                  previous: Run | None = None, no_previous: str = "") -> str:
    """`expected`: an expected baseline; the failures it lists show as `expected`, their own
    status in the cell's title (a view: the rows are what they are). `previous`: an earlier run
    of the same sweep, what changed since it after the verdicts; without one, `no_previous` says
    why there is nothing to compare with (as the end of the sweep does), where it was looked for."""
    matrix = expected_matrix(runs, expected)
    cells = matrix.cells()
    differ = differences(runs)
    present = legend(c.shown for _, _, c in cells)
    # The table of failures lists findings only; skipped and expected cells are counted apart.
    all_failures = failure_groups(matrix, limit=None, outcomes=frozenset({Outcome.FINDING}))
    breaks = break_groups(matrix)
    columns = matrix.columns
    marked = unreachable(runs)
    found_verdicts = verdicts(runs)
    found_headlines = headlines(found_verdicts)
    filters = row_filters(matrix, found_headlines)
    context = dict(
        title=title,
        faults=[(fault.value, fault.description) for fault in Fault if fault.value],
        runs=[run_view(r) for r in runs],
        missing_shards=[c for c in shard_coverage(runs) if c.missing],
        matrix=matrix,
        several=len(matrix.groups) > 1,
        total_cells=len(cells),
        tally=tally(matrix),
        since=since(runs, previous),
        since_shown=SINCE_SHOWN,
        no_previous=no_previous,
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
        serve_headlines=found_headlines,
        filters=filters,
        where_stopped=where_stopped,
        verdict_titles=list(dict.fromkeys(v.engine.title for v in found_verdicts)) if len(matrix.groups) == 1 else [],
        unreachable=marked,
        unreachable_types=sorted({model_type for _, model_type in marked}),
        env_chart=horizontal_bars(environment_counts(matrix), "Status counts per environment"),
        failures=all_failures[:FAILURES_SHOWN],
        auditor_errors=auditor_errors(matrix),
        more_failures=max(0, len(all_failures) - FAILURES_SHOWN),
        apart=counted_apart(matrix),
        graph_breaks=breaks[:BREAKS_SHOWN],
        more_breaks=max(0, len(breaks) - BREAKS_SHOWN),
        column_index={c.key: i for i, c in enumerate(columns)},
        group_of={c.key: gi for gi, g in enumerate(matrix.groups) for c in g.columns},
        data=_script_json({
            "columns": [{"environment": c.environment, "column": c.column} for c in columns],
            "order": [s.name for s in present],
            "ok": [s.name for s in present if s.ok],
            "short": [s.short for s in present],
            "outcomes": OUTCOME_CODES,
            "relabel": expected_label(matrix.baseline) if any(c.by_baseline for _, _, c in cells) else "",
            "stops": filters.stop_rows(matrix),  # per stop cause (filters.causes), its rows
            **_matrix_data(matrix, {s.name: i for i, s in enumerate(present)}, marked, found_verdicts),
        }),
    )
    return templating.render("report.html.j2", **context)


def _script_json(data: dict) -> Markup:
    """`data` as JSON to embed in a `<script type="application/json">`: compact, UTF-8, and with
    every `<` that could open a tag, close the element or open a comment escaped (`<` before a
    letter, `/` or `!`); jinja's `tojson` escapes every `<`, `>`, `&` and `'` as six bytes, and
    the messages are full of `'...'`."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return Markup(_TAG_OPEN.sub(r"\\u003c", text))


_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!])")


# The trailing fields of a kind (disagree, relabelled status, gate id) when unset: left out.
_DEFAULTS = (0, "", -1)

# A cell's outcome in the page's data, by its index here (the page's JavaScript reads the names).
OUTCOME_CODES = [o.value for o in Outcome]
# The time a cell took is in the page where it took this long or more (sorting by time finds the
# slow ones); below, 0: 1,600 sub-second times were 11 KB of a 622-type page.
SHOWN_SECONDS = 1.0

# A cell's fault, by its index here ("" first: nothing failed). A title names the fault it was made
# with, so the page keeps one fault per title (`titlefaults`), not one per kind: 20-40 KB lighter.
FAULT_CODES = [fault.value for fault in Fault]


def _title(titles: dict[str, int], title_faults: list[int], cell) -> int:
    """The id of a cell's title (its signature or status, and its fault), its fault kept beside it."""
    fault = cell.result.fault
    text = (cell.signature or str(cell.status)) + (f" · fault: {fault}" if fault else "")
    if text not in titles:
        titles[text] = len(titles)
        title_faults.append(FAULT_CODES.index(fault))
    return titles[text]


def _matrix_data(matrix, legend_index: dict[str, int], marked: dict[tuple[str, str], str], found=()) -> dict:
    """The matrix as the page's data, which its script turns into the table. A row per model type,
    `[model type, [cell, ...]]`; a cell is 0 where absent, else its kind (1 + an index into `kinds`),
    or `[kind, seconds]` where it took SHOWN_SECONDS or more (results.csv has every row's time). A kind is what cells share:
    `[legend index, outcome index, message id, title id]` and, only where set, `[..., disagree,
    the status a baseline relabelled, unreachable gate id]`; a cell's fault is its title's
    (`titlefaults`, an index into `faultcodes`: the fault filter reads it). One element per cell with four attributes made the page of a 622-type run 3.2 MB; a
    cell here is a number. With verdicts
    (auditor.report.serve) of one environment, a row has a third item, per engine in `engines`:
    "" where it serves the type, the gate's column where it stops it, `?` and the gate where
    undecided (a view beside the cells, not a cell: see serve.py)."""
    messages: dict[str, int] = {}
    message_titles: list[int] = []  # per message, the title of the first cell that had it
    titles: dict[str, int] = {}
    title_faults: list[int] = []
    gates: dict[str, int] = {}
    kinds: dict[tuple, int] = {}
    codes = {o: i for i, o in enumerate(Outcome)}
    engines, by_type = _verdict_view(found) if len(matrix.groups) == 1 else ({}, {})
    rows = []
    columns = matrix.columns
    for row in matrix.rows:
        cells: list = []
        for col, cell in zip(columns, row.cells, strict=True):
            if cell is None:
                cells.append(0)
                continue
            gate = marked.get((col.environment, row.model_type)) if col.column.startswith("decorate/") else None
            title = _title(titles, title_faults, cell)
            if cell.message not in messages:
                messages[cell.message] = len(messages)
                message_titles.append(title)
            kind = [legend_index[cell.shown], codes[cell.outcome], messages[cell.message], title,
                    1 if cell.disagree else 0, cell.status.value if cell.by_baseline else "",
                    gates.setdefault(gate, len(gates)) if gate else -1]
            while len(kind) > 4 and kind[-1] == _DEFAULTS[len(kind) - 5]:
                kind.pop()
            number = kinds.setdefault(tuple(kind), len(kinds)) + 1
            seconds = round(cell.seconds, 1) if cell.seconds >= SHOWN_SECONDS else 0
            cells.append([number, seconds] if seconds else number)
        verdict = by_type.get(row.model_type)
        rows.append([row.model_type, cells, [verdict.get(e) for e in engines]] if verdict else [row.model_type, cells])
    return {"rows": rows, "kinds": [list(k) for k in kinds], "messages": compact_messages(list(messages), message_titles),
            "titles": list(titles),
            "faultcodes": FAULT_CODES, "titlefaults": title_faults,
            "gates": list(gates), "engines": list(engines.values())}


# A message written as its base's head and tail around what differs saves at least this many bytes.
MESSAGE_SAVING = 16


def compact_messages(messages: list[str], title_of: list[int]) -> list:
    """The page's messages, each whole or, where that is shorter, as `[base, head, tail, middle]`:
    the message numbered `base` (the first message of the same title, always whole) cut to its
    first `head` and last `tail` characters with `middle` between them. The messages of one cause
    differ in a name, a number, a line (2,796 messages were 252 KB of a 631-type page); the page
    reads a message only when a cell is clicked (`message()` in report.js). Lengths count UTF-16
    code units as JavaScript does, so a message with a character beyond them stays whole."""
    first: dict[int, int] = {}
    out: list = []
    for number, (message, title) in enumerate(zip(messages, title_of, strict=True)):
        base = first.setdefault(title, number)
        encoded = _against(message, messages[base], base) if base != number else None
        whole = json.dumps(message, ensure_ascii=False)
        if encoded is not None and len(json.dumps(encoded, ensure_ascii=False)) + MESSAGE_SAVING <= len(whole):
            out.append(encoded)
        else:
            out.append(message)
    return out


def _against(message: str, base: str, number: int) -> list | None:
    if any(ord(c) > 0xFFFF for c in message + base):
        return None
    limit = min(len(message), len(base))
    head = 0
    while head < limit and message[head] == base[head]:
        head += 1
    tail = 0
    while tail < limit - head and message[-1 - tail] == base[-1 - tail]:
        tail += 1
    return [number, head, tail, message[head:len(message) - tail]]


def _verdict_view(found) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The engines (name -> title) and per model type each one's verdict as the page's data says it."""
    engines = {v.engine.name: v.engine.title for v in found}
    by_type: dict[str, dict[str, str]] = {}
    for v in found:
        text = "" if v.serves is Serves.SERVABLE else (v.gate if v.serves is Serves.STOPS else f"?{v.gate}")
        by_type.setdefault(v.model_type, {})[v.engine.name] = text
    return engines, by_type


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
