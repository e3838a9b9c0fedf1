"""The Markdown summary: the few lines a person pastes into a pull request or appends to
`$GITHUB_STEP_SUMMARY`. A pure renderer: runs in, text out.

Its shape is the table maintainers write by hand for a decorator fix: one row per probe (a
matrix column without its policy: `decorate/decoder`, `pickle/far-build:encoder:image`, ...),
one column per policy (per environment and policy when runs are merged), cells such as
`502 build, 1 refused (t5gemma2)`; the columns that have no policy in a second table; the long
lists (which model types fail where, the most common failures) folded in `<details>`.

It never exceeds `LIMIT` characters (GitHub's step-summary limit is 65,536), whatever the run:
the tables are bounded by the number of columns, each cell by `CELL_STATUSES` and `NAMES`, and
the folded lists stop, saying so, where the budget ends. Text from results (model type names,
signatures) is escaped so that no markup, pipe or newline of theirs changes the document.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.outcome import Outcome
from auditor.core.results import Run
from auditor.report.baseline import Baseline, expected_matrix
from auditor.report.breaks import break_groups
from auditor.report.environments import differences, sentence
from auditor.report.matrix import Matrix, column_order, environment_infos
from auditor.report.serve import headlines, verdicts, where_stopped
from auditor.report.since import SHOWN as SINCE_SHOWN
from auditor.report.since import since
from auditor.report.statuses import rank
from auditor.report.summary import auditor_errors, counted_apart, expected_label, failure_groups, tally

LIMIT = 60_000  # characters; below GitHub's 65,536 with room for what a job appends
NAMES = 3  # model types named in a table cell, when no more than this many have the status
CELL_STATUSES = 6  # statuses spelled out in a table cell; the rest are summed
NAME_WIDTH = 60  # characters of one name or signature in the text
LIST_NAMES = 40  # model types listed per column and status in the details
BREAK_ROWS = 10  # lines of the graph-break table (report.html has more)
CAUSE_WIDTH = 200  # characters of a cause (the signature's own cut): never cut before what it says
STOP_CAUSES = 3  # causes spelled out per gate an engine stops at
TOP_FINDINGS = 10  # rows of the most common findings, shown unfolded
MAX_LINES = 200  # a step summary is read, not searched: the folded lists stop short of this


@dataclass(frozen=True)
class _Probe:
    probe: str
    policy: str  # "" for a column without a policy


def render_summary(runs: Sequence[Run], *, limit: int = LIMIT, expected: Baseline | None = None,
                   previous: Run | None = None) -> str:
    """The Markdown summary of one or more runs (merged as the report merges them). `expected`: an
    expected baseline, whose listed failures are counted as `expected (baseline FILE)`; `previous`:
    an earlier run of the same sweep, what changed since it right after the counts."""
    matrix = expected_matrix(runs, expected)
    policies = _policies(runs)
    probes = {col.column: _split(col.column, policies) for col in matrix.columns}
    cells = _cell_texts(matrix)
    head = "\n".join([*_auditor_errors(matrix), *_heading(runs, matrix), *_since(since(runs, previous)), *_top_findings(matrix), "", *_policy_table(matrix, probes, policies, cells), "",
                      *_other_table(matrix, probes, cells), *_break_table(matrix)]).rstrip() + "\n"
    if len(head) > limit:  # only a run with absurdly many columns: keep what fits
        return _cut(head, limit)
    budget = limit - len(head)
    folded = _details(matrix, budget, MAX_LINES - head.count("\n"))
    return head + folded


def _heading(runs: Sequence[Run], matrix: Matrix) -> list[str]:
    types = len(matrix.rows)
    columns = len({c.column for c in matrix.columns})
    lines = [f"### auditor: {types} model type{'s' if types != 1 else ''}, {columns} column{'s' if columns != 1 else ''}",
             *_verdicts(runs)]
    infos = list(environment_infos(runs).items())
    if len(infos) == 1:
        info = infos[0][1]
        lines.append(f"Python {_esc(info.python)} · transformers {_esc(info.transformers)} · "
                     f"torch {_esc(info.torch)} · device {_esc(info.device)} · {_esc(info.platform)}"
                     + (f" · compiled as {_esc(info.compile_semantics)}" if info.compile_semantics else "")
                     + (f" · engines: {_esc(info.engine_versions, 400)}" if info.engines else ""))
    else:
        lines += ["", "| environment | Python | transformers | torch | engines | device | platform |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {_esc(env)} | {_esc(i.python)} | {_esc(i.transformers)} | {_esc(i.torch)} | "
                  f"{_esc(i.engine_versions or '-', 400)} | {_esc(i.device)} | {_esc(i.platform)} |" for env, i in infos]
        differ = sentence(differences(runs))
        if differ:
            lines += ["", f"**The environments differ in {_esc(differ, 400)}**: a difference between "
                          "their cells may come from any of these."]
    lines += ["", f"**{tally(matrix).text()}**" + _relabelled(matrix) + _reruns(matrix)]
    return lines


def _since(changes) -> list[str]:
    """`#### Since RUN: transformers 5.24.0 -> 5.25.0; 2 new findings, 1 fixed, 0 flaky`, a line
    per engine (auditor.report.changes: the one count), and the first cells of each kind."""
    if changes is None:
        return []
    lines = ["", f"#### {_esc(changes.headline(), 400)}"]
    for engine in changes.engines:
        lines += ["", f"- **{_esc(engine.line)}**"]
        lines += [f"  - {_esc(c.model_type)} {_esc(c.why)}{_fault(c.fault)}" + (f"; drift: {_esc(c.drift)}" if c.drift else "")
                  + (f"; again: `{c.repro}`" if c.repro else "") for c in engine.type_changes[:SINCE_SHOWN]]
        if engine.new_types:
            lines.append(f"  - new types: {_esc(', '.join(engine.new_types))} ({len(engine.new_served)} served)")
    if changes.new_types and not changes.engines:
        lines += ["", f"- new types: {_esc(', '.join(changes.new_types))}"]
    for title, cells in (("new", changes.new_findings), ("fixed", changes.fixed), ("flaky", changes.flaky)):
        if cells:
            shown = ", ".join(f"{_esc(c.model_type)} {_esc(c.column)} ({_esc(c.before or 'absent')} → {_esc(c.after)})"
                              for c in cells[:SINCE_SHOWN])
            more = f" and {len(cells) - SINCE_SHOWN} more (`auditor diff` has them all)" if len(cells) > SINCE_SHOWN else ""
            lines += ["", f"- {title}: {shown}{more}"]
    return lines


def _fault(fault: str) -> str:
    return f" (fault: {fault})" if fault else ""


def _auditor_errors(matrix: Matrix) -> list[str]:
    """What heads the summary when the auditor itself failed: its cells, a bug of ours, never the model's."""
    groups = auditor_errors(matrix)
    if not groups:
        return []
    lines = [f"### ⚠ The auditor's own errors: {sum(g.count for g in groups)} cells (a bug of ours, not the models')",
             ""]
    lines += [f"- {g.count}: `{_esc(g.signature, CAUSE_WIDTH)}` in {_esc(', '.join(g.columns), 400)} "
              f"({_esc(', '.join(g.model_types[:NAMES]), 400)}{' ...' if len(g.model_types) > NAMES else ''})"
              for g in groups[:TOP_FINDINGS]]
    return [*lines, ""]


def _top_findings(matrix: Matrix) -> list[str]:
    """The most common findings by cause, unfolded; the skipped and expected cells counted apart."""
    groups = failure_groups(matrix, limit=None, outcomes=frozenset({Outcome.FINDING}))
    lines = []
    if groups:
        lines += ["", f"#### The {min(TOP_FINDINGS, len(groups))} most common findings (of {len(groups)} causes)", "",
                  "| cells | cause (one cell's message) | statuses | fault | model types |", "|---|---|---|---|---|"]
        lines += [f"| {g.count} | {_esc(g.example or g.signature, CAUSE_WIDTH)} | {_esc(', '.join(g.statuses))} | "
                  f"{_esc(', '.join(g.faults))} | "
                  f"{_esc(', '.join(g.model_types[:5]), 400)}{' ...' if len(g.model_types) > 5 else ''} |"
                  for g in groups[:TOP_FINDINGS]]
    apart = [f"{a.count} {_esc(a.label)} (most often {_esc(a.reason.signature, CAUSE_WIDTH)})"
             for a in counted_apart(matrix) if a.reason is not None]
    if apart:
        lines += ["", "Not findings, counted apart: " + "; ".join(apart)]
    return lines


def _relabelled(matrix: Matrix) -> str:
    """` (of them, 2 expected (baseline FILE))`, or "" where no baseline relabelled a cell."""
    relabelled = sum(1 for _, _, c in matrix.cells() if c.by_baseline)
    return f" (of them, {relabelled} {_esc(expected_label(matrix.baseline), 400)})" if relabelled else ""


def _verdicts(runs: Sequence[Run]) -> list[str]:
    """Each environment's verdict line (auditor.report.serve), bold, then per engine where it
    stops types: a row per gate in the engine's order, with its most common causes (serve.csv has
    every type's verdict); the types one engine serves and another does not, folded."""
    found = headlines(verdicts(runs))
    lines: list[str] = []
    for headline in found:
        where = f"{_esc(headline.environment)}: " if len(found) > 1 else ""
        lines += ["", f"**{where}{_esc(headline.text, 1000)}**"]
        for engine in headline.tallies:
            lines += _stop_table(engine)
        split = [f"- {_esc(title)} only ({len(types)}): {', '.join(_esc(t) for t in types[:LIST_NAMES])}"
                 + (" ..." if len(types) > LIST_NAMES else "") for title, types in headline.only if types]
        lines += _folded(f"{len(headline.split)} that one engine serves and another does not", split)
    return [*lines, ""] if lines else []


def _stop_table(tally) -> list[str]:
    """Where one engine stops types, gate by gate: `| backend/registry | 83 | `cause` (60 types: a, b, c) |`."""
    stops = where_stopped(tally)
    if not stops:
        return []
    lines = ["", f"| {_esc(tally.unserved_title, 400)}: at | types | most common causes |", "|---|---|---|"]
    for gate in stops:
        causes = [f"{_esc(cause, CAUSE_WIDTH)} ({len(types)}: {', '.join(_esc(t) for t in types[:NAMES])}"
                  + (" ..." if len(types) > NAMES else "") + ")" for cause, types in gate.causes[:STOP_CAUSES]]
        rest = gate.causes[STOP_CAUSES:]
        if rest:
            causes.append(f"{sum(len(t) for _, t in rest)} more in {len(rest)} other cause{'s' if len(rest) > 1 else ''}")
        lines.append(f"| {_esc(gate.gate)} | {gate.count} | {'<br>'.join(causes)} |")
    return lines


def _folded(summary: str, items: list[str]) -> list[str]:
    if not items:
        return []
    more = [f"- ... and {len(items) - LIST_NAMES} more (serve.csv has them all)"] if len(items) > LIST_NAMES else []
    return ["", f"<details><summary>{summary}</summary>", "", *items[:LIST_NAMES], *more, "", "</details>"]


def _reruns(matrix: Matrix) -> str:
    """`; 3 cells rerun: 1 flaky (passed on a rerun), 2 confirmed`, or "" when none was."""
    rerun = [c for _, _, c in matrix.cells() if c.verdict.reruns]
    if not rerun:
        return ""
    flaky = sum(1 for c in rerun if c.outcome is Outcome.FLAKY)
    return (f"; {len(rerun)} cell{'s' if len(rerun) != 1 else ''} rerun: {flaky} flaky (passed on a rerun), "
            f"{len(rerun) - flaky} confirmed")


def _policies(runs: Sequence[Run]) -> list[str]:
    """The policies of the runs, in the order their sweeps named them (`--policies`)."""
    named = [p for run in runs for p in run.info.experiment.get("policies", [])]
    return list(dict.fromkeys([*named, *(r.policy for run in runs for r in run.results if r.policy)]))


def _policy_table(matrix: Matrix, probes: dict[str, _Probe], policies: list[str], cells: dict) -> list[str]:
    with_policy = [col for col in matrix.columns if probes[col.column].policy]
    if not with_policy:
        return []
    several = len(matrix.environments) > 1
    order = {policy: i for i, policy in enumerate(policies)}
    heads = sorted(dict.fromkeys((col.environment, probes[col.column].policy) for col in with_policy),
                   key=lambda head: (matrix.environments.index(head[0]), order[head[1]]))
    rows = sorted({probes[col.column].probe for col in with_policy}, key=column_order)
    index = {(col.environment, probes[col.column].probe, probes[col.column].policy): col for col in with_policy}
    titles = [f"{_esc(policy)} ({_esc(env)})" if several else _esc(policy) for env, policy in heads]
    lines = ["| probe | " + " | ".join(titles) + " |", "|---|" + "---|" * len(heads)]
    for probe in rows:
        texts = [cells.get(index.get((env, probe, policy)), "-") for env, policy in heads]
        lines.append(f"| {_esc(probe)} | " + " | ".join(texts) + " |")
    return lines


def _other_table(matrix: Matrix, probes: dict[str, _Probe], cells: dict) -> list[str]:
    plain = [col for col in matrix.columns if not probes[col.column].policy]
    if not plain:
        return []
    environments = list(dict.fromkeys(col.environment for col in plain))
    index = {(col.environment, col.column): col for col in plain}
    names = sorted({col.column for col in plain}, key=column_order)
    titles = [_esc(env) for env in environments] if len(environments) > 1 else ["result"]
    lines = ["| column | " + " | ".join(titles) + " |", "|---|" + "---|" * len(titles)]
    for name in names:
        texts = [cells.get(index.get((env, name)), "-") for env in environments]
        lines.append(f"| {_esc(name)} | " + " | ".join(texts) + " |")
    return lines


def _break_table(matrix: Matrix) -> list[str]:
    """The lines graph breaks happen at, most model types first: one fix at a line unblocks
    every type of its row (auditor.report.breaks)."""
    groups = break_groups(matrix)
    if not groups:
        return []
    lines = ["", f"**Graph breaks by line**: {len(groups)} line{'s' if len(groups) != 1 else ''}, "
                 "most model types first; a fix at one line unblocks every type of its row", "",
             "| types | break at | owner | reason | model types |", "|---|---|---|---|---|"]
    for g in groups[:BREAK_ROWS]:
        where = f"{g.where} in {g.function}" if g.function else g.where
        if len(where) > 2 * NAME_WIDTH:  # a long path keeps its end: the file, line and function
            where = "…" + where[-2 * NAME_WIDTH + 1:]
        types = ", ".join(_esc(t) for t in g.model_types[:NAMES]) + (f" and {g.count - NAMES} more" if g.count > NAMES else "")
        lines.append(f"| {g.count} | {_esc(where, 2 * NAME_WIDTH)} | {_esc(g.owner or '-')} | "
                     f"{_esc(g.reason, 2 * NAME_WIDTH)} | {types} |")
    if len(groups) > BREAK_ROWS:
        lines += ["", f"... and {len(groups) - BREAK_ROWS} more lines: report.html shows more, and each "
                      "graph-break row of results.jsonl lists its breaks (`extras.breaks`)."]
    return lines


def _cell_texts(matrix: Matrix) -> dict:
    """Column -> `502 build, 1 refused (t5gemma2), 35 error`: passes first, then the rest by
    count; an expected failure is its own entry, labelled."""
    by_column: dict = {}
    for model_type, col, cell in matrix.cells():
        outcome = cell.outcome
        label = f"{cell.status} (expected: baseline)" if cell.by_baseline \
            else f"{cell.status} ({outcome.label})" if outcome in (Outcome.EXPECTED, Outcome.FLAKY) else cell.status
        by_column.setdefault(col, {}).setdefault((label, outcome is Outcome.PASS), []).append(model_type)
    texts = {}
    for col, statuses in by_column.items():
        ordered = sorted(statuses.items(), key=lambda kv: (not kv[0][1], -len(kv[1]), rank(kv[0][0])))
        parts = []
        for (label, passed), types in ordered[:CELL_STATUSES]:
            named = f" ({', '.join(_esc(t) for t in sorted(types))})" if len(types) <= NAMES and not passed else ""
            parts.append(f"{len(types)} {_esc(label)}{named}")
        rest = ordered[CELL_STATUSES:]
        if rest:
            parts.append(f"{sum(len(t) for _, t in rest)} in {len(rest)} other status{'es' if len(rest) > 1 else ''}")
        texts[col] = ", ".join(parts)
    return texts


def _details(matrix: Matrix, budget: int, lines: int = MAX_LINES) -> str:
    """The folded lists, as many of their items as fit in `budget` characters and `lines` lines."""
    out: list[str] = []
    used = 0

    def section(summary: str, items: list[str], intro: str = "") -> None:
        nonlocal used
        start, end = f"\n<details><summary>{summary}</summary>\n\n{intro}", "\n</details>\n"
        room = budget - used - len(start) - len(end) - 120
        if room <= 0:
            return
        body, dropped = [], 0
        for item in items:
            if len(item) + 1 > room or len(body) >= lines - 8:
                dropped = len(items) - len(body)
                break
            body.append(item)
            room -= len(item) + 1
        if dropped:
            body.append(f"\n... {dropped} more not shown (the summary stays under {LIMIT:,} characters); "
                        "report.html and matrix.csv have them all.")
        text = start + "\n".join(body) + end
        out.append(text)
        used += len(text)

    failing: dict = {}
    for model_type, col, cell in matrix.cells():
        if cell.outcome is Outcome.FINDING:
            failing.setdefault((col, cell.status), []).append(model_type)
    items = []
    several = len(matrix.environments) > 1  # a line per column and status: a few hundred at most
    for (col, status), types in sorted(failing.items(), key=lambda kv: (column_order(kv[0][0].column), rank(kv[0][1]))):
        where = f"{_esc(col.column)} ({_esc(col.environment)})" if several else _esc(col.column)
        shown = ", ".join(_esc(t) for t in sorted(types)[:LIST_NAMES])
        more = f" and {len(types) - LIST_NAMES} more" if len(types) > LIST_NAMES else ""
        items.append(f"- **{where}** · {_esc(status)} ({len(types)}): {shown}{more}")
    if items:
        section(f"Findings per column ({sum(len(t) for t in failing.values())} cells)", items)
    return "".join(out)


def _split(column: str, policies: list[str]) -> _Probe:
    probe, _, last = column.rpartition("/")
    return _Probe(probe, last) if probe and last in policies else _Probe(column, "")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# Backslash escapes (CommonMark escapes any ASCII punctuation), not HTML entities: the text reads
# the same where Markdown is shown raw (a terminal, `--markdown -`), and `\\|` holds in a table.
_SAFE = {c: "\\" + c for c in "&<>|`*_[]#\\"}
_MARKUP = re.compile("|".join(re.escape(c) for c in _SAFE))


def _esc(text: str, width: int = NAME_WIDTH) -> str:
    """`text` as inert Markdown inside a table cell: one line, no markup, bounded."""
    text = _CONTROL.sub(" ", str(text)).strip()
    if len(text) > width:
        text = text[:width - 1] + "…"
    return _MARKUP.sub(lambda m: _SAFE[m.group()], text)  # one pass: no escape is escaped again


def _cut(text: str, limit: int) -> str:
    note = "\n\n... cut to stay under the step-summary limit; report.html has everything.\n"
    return text[:limit - len(note)].rsplit("\n", 1)[0] + note
