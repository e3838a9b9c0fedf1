"""A RunDiff as terminal text, Markdown (diff.md) and HTML (diff.html); pure functions."""

from __future__ import annotations

from collections.abc import Sequence

from auditor.report import templating
from auditor.report.changes import EngineChanges, TypeChange, text_lines
from auditor.report.diff import CellChange, RunDiff, summary_line
from auditor.report.statuses import legend

NAMES_SHOWN = 40  # per list on the terminal; diff.md and diff.html have them all
_LABELS = {"folded": "  [with the type's verdict]"}  # a cell counted in its type's one change


def render_diff_text(diff: RunDiff) -> str:
    width = max([len(c.model_type) for c in _all_changes(diff)] + [10])
    col_width = max([len(c.column) for c in _all_changes(diff)] + [6])
    lines = [
        f"base: {diff.base.name}  {diff.base.environment}  ({diff.base.model_types} model types, {diff.base.cells} cells)",
        f"new:  {diff.new.name}  {diff.new.environment}  ({diff.new.model_types} model types, {diff.new.cells} cells)",
        *(text_lines(diff.changes, NAMES_SHOWN) if diff.changes is not None else ()),
        "cells: " + summary_line(diff),
    ]

    def section(title: str, changes: Sequence[CellChange]) -> None:
        if not changes:
            return
        lines.extend(["", f"{title} ({len(changes)}):"])
        for c in changes:
            shown = " -> ".join(c.explanation)  # the rows' own messages, whole
            mark = "  [allowed]" if c.allowed else _LABELS.get(c.label, f"  [{c.label}]" if c.label else "")
            lines.append(f"  {c.model_type:<{width}}  {c.column:<{col_width}}  "
                         f"{c.before or '-'} -> {c.after or '-'}{mark}  {shown}".rstrip())

    section("Regressions", diff.regressions)
    section("Fixes", diff.fixes)
    section("Changed failures", diff.changed)
    for title, names in _name_lists(diff):
        if names:
            more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
            lines.extend(["", f"{title} ({len(names)}): {', '.join(names[:NAMES_SHOWN])}{more}"])
    if diff.drift is not None and diff.drift.types:
        lines.extend(["", f"Config drift: {diff.drift.summary()}"])
        for group in diff.drift.shared:
            lines.append(f"  shared by {len(group.model_types)} types: {_short(group.change.text())}")
        shown = [t for t in diff.drift.types if t.changes]
        for t in shown[:NAMES_SHOWN]:
            lines.append(f"  {t.model_type:<{width}}  " + "; ".join(_short(c.text()) for c in t.changes[:4])
                         + (f"; and {len(t.changes) - 4} more" if len(t.changes) > 4 else ""))
        if len(shown) > NAMES_SHOWN:
            lines.append(f"  and {len(shown) - NAMES_SHOWN} more model types (diff.md has them all)")
    return "\n".join(lines) + "\n"


def render_diff_markdown(diff: RunDiff) -> str:
    lines = [
        f"# Diff: {_md(diff.base.name)} → {_md(diff.new.name)}",
        "",
        "| | run | environment | engines | started | model types | cells |",
        "|---|---|---|---|---|---:|---:|",
        *(f"| {label} | {_md(s.name)} | {_md(s.environment)} | {_md(s.engines or '-')} | {_md(s.started)} "
          f"| {s.model_types} | {s.cells} |" for label, s in (("base", diff.base), ("new", diff.new))),
        "",
        f"**{summary_line(diff)}**",
    ]
    lines += _engines_markdown(diff)
    for title, changes in _change_sections(diff):
        if not changes:
            continue
        lines.extend(["", f"## {title} ({len(changes)})", "",
                      "| model type | column | before | after | message |", "|---|---|---|---|---|"])
        for c in changes:
            after = c.after + (" (allowed)" if c.allowed else "")
            lines.append(f"| {_md(c.model_type)} | {_md(c.column)} | {c.before or '—'} | {after or '—'} "
                         f"| {' → '.join(_md(part) for part in c.explanation)} |")
    for title, names in _name_lists(diff):
        if names:
            lines.extend(["", f"## {title} ({len(names)})", "", ", ".join(_md(n) for n in names)])
    lines += _drift_markdown(diff)
    return "\n".join(lines) + "\n"


def engine_changes(diff: RunDiff) -> list[tuple[EngineChanges, str, TypeChange]]:
    """Each engine's changed types with their kind (lost, gained, moved, undecided), engine by
    engine: the per-engine table of diff.md and diff.html, from the one change model."""
    engines = diff.changes.engines if diff.changes is not None else ()
    return [(engine, kind, change) for engine in engines
            for kind, group in (("lost", engine.lost), ("gained", engine.gained), ("moved", engine.moved),
                                ("undecided", engine.undecided))
            for change in group]


def _engines_markdown(diff: RunDiff) -> list[str]:
    if diff.changes is None or not diff.changes.engines:
        return []
    lines = ["", "## What changed, per engine", "", _md(diff.changes.headline()), ""]
    for engine in diff.changes.engines:
        lines.append(f"- **{_md(engine.line)}**")
        if engine.new_types:
            served = f" (served: {', '.join(engine.new_served)})" if engine.new_served else ""
            lines.append(f"  - new types: {_md(', '.join(engine.new_types) + served)}")
        if engine.removed_types:
            lines.append(f"  - removed types: {_md(', '.join(engine.removed_types))}")
    changed = engine_changes(diff)
    if changed:
        lines += ["", "| engine | model type | change | before | after | why | fault | config drift | again |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {_md(engine.label)} | {_md(c.model_type)} | {kind} | {_md(_short(c.before))} "
                  f"| {_md(_short(c.after))} | {_md(c.why)} | {_md(c.fault)} | {_md(c.drift)} "
                  f"| {'`' + c.repro + '`' if c.repro else ''} |" for engine, kind, c in changed]
    return lines


def _drift_markdown(diff: RunDiff) -> list[str]:
    drift = diff.drift
    if drift is None or not drift.compared:
        return []
    lines = ["", f"## Config drift ({len(drift.types)})", "", f"{_md(drift.summary())}."]
    if drift.shared:
        lines += ["", "### Shared by many model types", "", "| change | model types |", "|---|---:|"]
        lines += [f"| {_md(g.change.text())} | {len(g.model_types)} |" for g in drift.shared]
    own = [t for t in drift.types if t.changes]
    if own:
        lines += ["", "### Per model type (its own changes)", "", "| model type | changes |", "|---|---|"]
        for t in own:
            extra = f"<br>and {t.shared} shared change{'s' if t.shared != 1 else ''}" if t.shared else ""
            lines.append(f"| {_md(t.model_type)} | " + "<br>".join(_md(c.text()) for c in t.changes) + extra + " |")
    return lines


def render_diff_html(diff: RunDiff) -> str:
    statuses = {s for c in _all_changes(diff) for s in (c.before, c.after) if s}
    styles = {s.name: s for s in legend(statuses)}
    return templating.render(
        "diff.html.j2", diff=diff, summary=summary_line(diff), sections=_change_sections(diff),
        name_lists=_name_lists(diff), styles=styles, changed=engine_changes(diff),
    )


def _change_sections(diff: RunDiff) -> list[tuple[str, tuple[CellChange, ...]]]:
    return [
        ("Regressions", diff.regressions),
        ("Fixes", diff.fixes),
        ("Changed failures", diff.changed),
        ("Cells only in new", diff.added_cells),
        ("Cells only in base", diff.removed_cells),
    ]


def _name_lists(diff: RunDiff) -> list[tuple[str, tuple[str, ...]]]:
    return [
        ("Model types added", diff.added_types),
        ("Model types removed", diff.removed_types),
        ("Columns only in new", diff.added_columns),
        ("Columns only in base", diff.removed_columns),
        ("Allow-list entries that matched nothing", diff.unused_allow),
    ]


def _all_changes(diff: RunDiff) -> list[CellChange]:
    return [c for _, changes in _change_sections(diff) for c in changes]


def _md(text: str) -> str:
    """Table-safe Markdown text: one line, pipes and angle brackets escaped."""
    text = " ".join(text.split())
    return (text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("`", "\\`"))


VERDICT_SHOWN = 200  # characters of a verdict in diff.md's table (diff.html has it whole, in a tooltip)


def _short(text: str) -> str:
    return text if len(text) <= VERDICT_SHOWN else text[:VERDICT_SHOWN - 1] + "…"
