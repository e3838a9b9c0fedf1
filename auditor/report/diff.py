"""Comparing two runs cell by cell (a cell is a model type and a matrix column).

Like pyperf's compare_to: cells are matched by name, and what exists on one side only is listed
rather than compared. A regression is a cell that was `build` and is something else now; an
allow list can excuse known ones, by model type or by model type and column prefix, and so can an
expected baseline (auditor.report.baseline) that lists the failure; a regression whose cell passed
on a rerun (flaky) is not confirmed, and blocks nothing either.

Beside the cells, the engines' verdicts: what changed per engine is the one change model
(auditor.report.changes, `RunDiff.changes`): a type an engine lost, gained, serves another way or
stops at another gate is one change with its fault, cause, drift and repro, and the cells that
changed with it are folded into it. Two runs under two releases of one engine (`auditor sweep
--engine vllm==0.33.0` beside vLLM 0.34.0) differ there first: a verdict is several cells, and a
cell that passes on both sides (a serves row that constructs another class) is no cell change.

A type the new release removed (auditor.report.changes.removed_types) counts once, as removed,
like a type the new run lacks: its cells (a build that cannot make its config, a weights row
that says `type-removed`) are no regressions of their own. Cells are matched, and changes grouped,
by their signatures; what a change shows is each row's own message (auditor.report.causes.finding_text).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from auditor.core.outcome import Outcome
from auditor.core.results import Result, Run
from auditor.report.baseline import Baseline, expected_matrix
from auditor.report.causes import finding_text
from auditor.report.changes import Changes, TypeChange, changes
from auditor.report.drift import Drift, config_drift
from auditor.report.matrix import column_order, run_cells, run_name
from auditor.report.statuses import is_ok


class AllowListError(ValueError):
    """An allow-list line that is not `model_type` or `model_type/column-prefix`."""


@dataclass(frozen=True)
class AllowList:
    """Entries `model_type` or `model_type/column-prefix`; a prefix matches whole `/` segments."""

    entries: tuple[str, ...] = ()

    def matches(self, entry: str, model_type: str, column: str) -> bool:
        entry_type, _, prefix = entry.partition("/")
        if entry_type != model_type:
            return False
        return not prefix or column == prefix or column.startswith(prefix + "/")

    def allows(self, model_type: str, column: str) -> bool:
        return any(self.matches(e, model_type, column) for e in self.entries)


def parse_allow_list(text: str, source: str = "allow list") -> AllowList:
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if any(ch.isspace() for ch in line) or line.startswith("/") or line.endswith("/"):
            raise AllowListError(f"{source}:{number}: {raw.strip()!r} is not `model_type` or "
                                 "`model_type/column-prefix`")
        entries.append(line)
    return AllowList(tuple(entries))


@dataclass(frozen=True)
class DiffSide:
    """What a diff needs to say about one of its runs."""

    name: str
    environment: str
    started: str
    model_types: int
    cells: int
    engines: str = ""  # RunInfo.engine_versions: the serving engines' versions


@dataclass(frozen=True)
class CellChange:
    model_type: str
    column: str
    before: str  # status, "" when the cell is absent
    after: str
    before_signature: str = ""
    after_signature: str = ""
    before_message: str = ""
    after_message: str = ""
    allowed: bool = False
    # "expected" (the baseline lists it), "flaky" (a rerun passed) or "folded" (part of a type's
    # verdict change, auditor.report.changes: the type counts once, as that): not blocking
    label: str = ""

    @property
    def key(self) -> str:
        return f"{self.model_type}/{self.column}"

    @property
    def explanation(self) -> tuple[str, ...]:
        """What explains the change, in the rows' own messages (finding_text): the error that
        went away for a fix, (old, new) for a failure whose signature changed, else the error now."""
        before = finding_text(self.before_message, self.before_signature)
        after = finding_text(self.after_message, self.after_signature)
        if not self.after or is_ok(self.after):
            return (before,)
        if self.before and not is_ok(self.before) and self.before_signature and \
                self.before_signature != self.after_signature:
            return (before, after)
        return (after,)


@dataclass(frozen=True)
class RunDiff:
    base: DiffSide
    new: DiffSide
    regressions: tuple[CellChange, ...]
    fixes: tuple[CellChange, ...]
    changed: tuple[CellChange, ...]  # failing on both sides, with another status or signature
    added_types: tuple[str, ...]
    removed_types: tuple[str, ...]  # the base's types the new run lacks or says the release removed
    added_columns: tuple[str, ...]
    removed_columns: tuple[str, ...]
    added_cells: tuple[CellChange, ...]  # in a model type and column both runs have
    removed_cells: tuple[CellChange, ...]
    unchanged: int
    unused_allow: tuple[str, ...] = ()
    drift: Drift | None = None  # the default configs' drift (auditor.report.drift), separate from cells
    changes: Changes | None = None  # the one count of what changed (auditor.report.changes)
    allow: AllowList = AllowList()  # the allow list it was made with

    @property
    def blocking(self) -> tuple[CellChange, ...]:
        """Regressions no allow-list entry excuses, unconfirmed or expected ones left out: what
        makes `auditor diff` exit 1."""
        return tuple(r for r in self.regressions if not r.allowed and not r.label)

    def failing(self, engines: tuple[str, ...] = ()) -> bool:
        """The diff's one verdict, what `auditor diff` and upgrade-check exit 1 on (and diff.html's
        badge says): with `engines` (--fail-on-engine), whether one of them lost a type; else
        whether a cell regressed unexcused or any engine lost a type."""
        return bool(self.lost(engines)) if engines else bool(self.blocking or self.lost())

    def lost(self, engines: tuple[str, ...] | None = None) -> tuple[TypeChange, ...]:
        """The types an engine (of `engines`, registry names; None: any) served and stops now,
        those the allow list excuses (by type, or type and gate) left out."""
        found = self.changes.engines if self.changes is not None else ()
        return tuple(c for e in found if engines is None or e.name in engines for c in e.lost
                     if not self.allow.allows(c.model_type, c.gate))


def side(run: Run) -> DiffSide:
    cells = run_cells(run)
    return DiffSide(name=run_name(run), environment=run.info.environment, started=run.info.started,
                model_types=len({m for m, _ in cells}), cells=len(cells), engines=run.info.engine_versions)


def diff_runs(base: Run, new: Run, allow: AllowList = AllowList(), expected: Baseline | None = None) -> RunDiff:
    before, after = run_cells(base), run_cells(new)
    drift = config_drift(base, new)
    found = changes(base, new, drift)
    folded = {(c.model_type, column) for e in found.engines for c in e.type_changes for column in c.folded}
    labels = {(m, col.column): str(cell.outcome) for m, col, cell in expected_matrix([new], expected).cells()
              if cell.outcome in (Outcome.FLAKY, Outcome.EXPECTED)}
    types_before, types_after = {m for m, _ in before}, {m for m, _ in after}
    columns_before, columns_after = {c for _, c in before}, {c for _, c in after}
    # A removed type counts once, as removed: none of its cells is compared.
    common_types = (types_before & types_after) - set(found.removed_types)
    common_columns = columns_before & columns_after

    regressions, fixes, changed, added, removed = [], [], [], [], []
    unchanged = 0
    for key in sorted(set(before) | set(after), key=lambda k: (k[0], column_order(k[1]))):
        model_type, column = key
        if model_type not in common_types or column not in common_columns:
            continue
        b, a = before.get(key), after.get(key)
        change = _change(model_type, column, b, a)
        if b is None:
            added.append(change)
        elif a is None:
            removed.append(change)
        elif is_ok(b.status.value) and not is_ok(a.status.value):
            label = labels.get(key, "") or ("folded" if key in folded else "")
            regressions.append(replace(change, allowed=allow.allows(model_type, column), label=label))
        elif not is_ok(b.status.value) and is_ok(a.status.value):
            fixes.append(replace(change, label="folded" if key in folded else ""))
        elif not is_ok(a.status.value) and (b.status != a.status or b.signature != a.signature):
            changed.append(replace(change, label="folded" if key in folded else ""))
        else:
            unchanged += 1

    used = {e for r in regressions for e in allow.entries if allow.matches(e, r.model_type, r.column)}
    return RunDiff(
        base=side(base), new=side(new),
        regressions=tuple(regressions), fixes=tuple(fixes), changed=tuple(changed),
        added_types=tuple(sorted(types_after - types_before)),
        removed_types=found.removed_types,
        added_columns=tuple(sorted(columns_after - columns_before, key=column_order)),
        removed_columns=tuple(sorted(columns_before - columns_after, key=column_order)),
        added_cells=tuple(added), removed_cells=tuple(removed),
        unchanged=unchanged,
        unused_allow=tuple(e for e in allow.entries if e not in used),
        drift=drift,
        changes=found,
        allow=allow,
    )


def _change(model_type: str, column: str, b: Result | None, a: Result | None) -> CellChange:
    return CellChange(
        model_type=model_type, column=column,
        before=b.status.value if b else "", after=a.status.value if a else "",
        before_signature=b.signature if b else "", after_signature=a.signature if a else "",
        before_message=b.message if b else "", after_message=a.message if a else "",
    )


def summary_line(diff: RunDiff) -> str:
    """`1 regression (0 allowed), 1 fix, ...`: the one-line verdict of a diff."""
    allowed = sum(1 for r in diff.regressions if r.allowed and not r.label)
    unconfirmed = sum(1 for r in diff.regressions if r.label == "flaky")
    expected = sum(1 for r in diff.regressions if r.label == "expected")
    folded = sum(1 for r in diff.regressions if r.label == "folded")
    excused = [f"{n} {what}" for n, what in ((allowed, "allowed"), (unconfirmed, "flaky"), (expected, "expected"),
                                             (folded, "part of a type's verdict change")) if n]
    parts = [
        _plural(len(diff.regressions), "regression") + (f" ({', '.join(excused)})" if excused else ""),
        _plural(len(diff.fixes), "fix", "fixes") + _folded(diff.fixes),
        _plural(len(diff.changed), "changed failure") + _folded(diff.changed),
        _plural(len(diff.added_types), "model type") + " added",
        f"{len(diff.removed_types)} removed",
    ]
    if diff.added_columns or diff.removed_columns:
        parts.append(f"columns +{len(diff.added_columns)}/-{len(diff.removed_columns)}")
    if diff.added_cells or diff.removed_cells:
        parts.append(f"cells +{len(diff.added_cells)}/-{len(diff.removed_cells)}")
    parts.append(f"{diff.unchanged} unchanged")
    if diff.drift is not None and diff.drift.compared:
        parts.append(f"{len(diff.drift.types)} default config{'s' if len(diff.drift.types) != 1 else ''} drifted")
    return ", ".join(parts)


def _folded(cells) -> str:
    folded = sum(1 for c in cells if c.label == "folded")
    return f" ({folded} part of a type's verdict change)" if folded else ""


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"

