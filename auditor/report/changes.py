"""What changed between two runs, counted once, at the level users decide on.

Every output that says what changed (the end of a sweep, summary.md, report.html's since-section,
`auditor diff`, `auditor gate`, upgrade-check, JUnit) prints these numbers, from this module:

* per serving engine (the verdicts of auditor.report.serve): the types that lost its verdict
  (served, now stopped), gained it, moved (served another way, or stopped at another gate), new
  and removed types (and how many of the new ones it serves), the undecided apart;
* per cell (the one cell rule, auditor.core.outcome): new findings, fixed and flaky cells. A cell
  that belongs to a type's verdict change (the gate that now stops the type, a gate the stop
  leaves "not reached") is part of that type's one change, never a change of its own, and a new
  type's cells are the new type's;
* per type: new types, and removed ones (`removed_types`), a removed type's cells being the
  removed type's, never findings of their own (a build that cannot make its config, a weights
  row that says `type-removed`: one per check, one removal).

Each change carries its fault, its cause (what it is grouped by), its own message (what it shows,
auditor.report.causes.finding_text), the config drift that explains it where the runs have
fingerprints (auditor.report.drift) and the command that sweeps it again (auditor.core.repro).
Pure: two runs in, a Changes out.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.core.outcome import Outcome
from auditor.core.repro import sweep_command
from auditor.core.results import Run, RunInfo
from auditor.core.status import Status
from auditor.report.causes import NOT_REACHED, cause_of, finding_text
from auditor.report.drift import Drift, config_drift
from auditor.report.matrix import build_matrix, run_name
from auditor.report.serve import Serves, ServeVerdict, verdicts


@dataclass(frozen=True)
class TypeChange:
    """One engine's verdict on one type, changed: the type's one change."""

    model_type: str
    before: str  # the verdict's text before ("servable: ...", "stops at ...")
    after: str
    why: str  # "now stops at backend/sglang/tp-plan: ..." / "served now (native X)" / ...
    gate: str = ""  # the column that decides it (now; before, for a gained type)
    fault: str = ""
    cause: str = ""
    drift: str = ""  # the type's default config drift, one line, where the runs have it
    repro: str = ""  # the command that sweeps the deciding gate again
    folded: tuple[str, ...] = ()  # its cells that changed with it (its gate, the gates not reached)


@dataclass(frozen=True)
class EngineChanges:
    """One engine's changes between the runs."""

    name: str  # the engine's registry name (`vllm`)
    title: str  # `vLLM`
    version: str  # the release the new run's verdicts answer for
    compared: int  # types both runs have verdicts of this engine for
    lost: tuple[TypeChange, ...] = ()
    gained: tuple[TypeChange, ...] = ()
    moved: tuple[TypeChange, ...] = ()  # still served another way, or stopped at another gate
    undecided: tuple[TypeChange, ...] = ()  # undecided on one side: the machine's, not the engine's
    new_types: tuple[str, ...] = ()
    new_served: tuple[str, ...] = ()  # of new_types, the ones it serves
    removed_types: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.lost or self.gained or self.moved or self.new_types or self.removed_types)

    @property
    def label(self) -> str:
        return f"{self.title} {self.version}"

    def counts(self) -> str:
        """`1 lost, 1 gained, 6 new types (5 served)`, or `none of your 10 types changed`."""
        if not self.changed and not self.undecided:
            return f"none of your {self.compared} type{'s' if self.compared != 1 else ''} changed"
        parts = [f"{len(group)} {word}" for group, word in ((self.lost, "lost"), (self.gained, "gained"),
                                                            (self.moved, "moved"), (self.undecided, "undecided"))
                 if group]
        if self.new_types:
            parts.append(f"{_plural(len(self.new_types), 'new type')} ({len(self.new_served)} served)")
        if self.removed_types:
            parts.append(f"{_plural(len(self.removed_types), 'type')} removed")
        return ", ".join(parts) + f" of {self.compared}"

    @property
    def line(self) -> str:
        """`vLLM 0.34.0: none of your 10 types changed`, `SGLang 0.5.23: 1 lost of 10`."""
        return f"{self.label}: {self.counts()}"

    @property
    def type_changes(self) -> tuple[TypeChange, ...]:
        return (*self.lost, *self.gained, *self.moved, *self.undecided)


@dataclass(frozen=True)
class CellNote:
    """One cell that changed on its own (not as part of a type's verdict change)."""

    model_type: str
    column: str
    before: str  # status before, "" when absent
    after: str
    signature: str = ""
    fault: str = ""
    cause: str = ""
    drift: str = ""
    repro: str = ""
    message: str = ""  # the row's own (cause and signature group; this is what a reader sees)

    @property
    def text(self) -> str:
        """What the change shows (auditor.report.causes.finding_text)."""
        return finding_text(self.message, self.signature)


@dataclass(frozen=True)
class Changes:
    against: str  # the earlier run's name
    name: str  # the later run's name
    environment: tuple[str, ...]  # "transformers 5.24.0 -> 5.25.0", ...
    engines: tuple[EngineChanges, ...]
    new_findings: tuple[CellNote, ...]
    fixed: tuple[CellNote, ...]
    flaky: tuple[CellNote, ...]
    new_types: tuple[str, ...] = ()
    removed_types: tuple[str, ...] = ()  # each once (removed_types()), its cells no findings of their own
    folded: int = 0  # cells counted as part of a type's verdict change
    failing_new_types: tuple[str, ...] = ()  # of new_types, those with a finding

    @property
    def new_failures(self) -> tuple[CellNote, ...]:  # the nightly gate's word for them
        return self.new_findings

    def engine(self, name: str) -> EngineChanges | None:
        return next((e for e in self.engines if e.name == name), None)

    def regressed(self, names: tuple[str, ...] | None = None) -> bool:
        """Whether an engine (of `names`; None: any) lost a type, or (without names) a cell is a new finding."""
        engines = [e for e in self.engines if names is None or e.name in names]
        return any(e.lost for e in engines) or (names is None and bool(self.new_findings))

    def cells_line(self) -> str:
        """`2 new findings, 1 fixed, 0 flaky (3 more cells are part of a type's change)`."""
        text = (f"{_plural(len(self.new_findings), 'new finding')}, {len(self.fixed)} fixed, "
                f"{len(self.flaky)} flaky")
        return text + (f" ({self.folded} more cell{'s' if self.folded != 1 else ''} part of a type's change)"
                       if self.folded else "")

    def headline(self) -> str:
        """`Since N: transformers 5.24.0 -> 5.25.0; 2 new findings, 1 fixed, 0 flaky; 6 new types`."""
        parts = [", ".join(self.environment) or "the same releases", self.cells_line()]
        if self.new_types or self.removed_types:
            parts.append(f"{len(self.new_types)} new type{'s' if len(self.new_types) != 1 else ''} "
                         f"({len(self.failing_new_types)} with findings), {len(self.removed_types)} removed")
        return f"Since {self.against}: " + "; ".join(parts)


def changes(base: Run, new: Run, drift: Drift | None = None) -> Changes:
    """What changed from `base` to `new` (see the module); `drift`: their config drift where the
    caller has it already (auditor.report.diff does)."""
    drift = config_drift(base, new) if drift is None else drift
    before, after = _cells(base), _cells(new)
    removed = removed_types(before, after)
    gone = set(removed)
    engines = tuple(_engine_changes(base, new, drift, before, after, gone))
    folded_cells = {(c.model_type, column) for e in engines for c in e.type_changes
                    for column in c.folded}
    base_types, new_types = {m for m, _ in before}, {m for m, _ in after}
    notes: dict[str, list[CellNote]] = {"new": [], "fixed": [], "flaky": []}
    folded = 0
    failing_new = set()
    for key, cell in after.items():
        if key[0] not in base_types:  # a new type's cells are the new type's
            failing_new.update((key[0],) if cell.outcome is Outcome.FINDING else ())
            continue
        if key[0] in gone:  # and a removed type's, the removed type's
            continue
        kind = _kind(before.get(key), cell)
        if kind and key in folded_cells:
            folded += 1
        elif kind in notes:
            notes[kind].append(_note(key, before.get(key), cell, new.info, drift))
    return Changes(run_name(base), run_name(new), environment_changes(base.info, new.info), engines,
                   tuple(notes["new"]), tuple(notes["fixed"]), tuple(notes["flaky"]),
                   tuple(sorted(new_types - base_types)), removed, folded, tuple(sorted(failing_new)))


def removed_types(before: dict, after: dict) -> tuple[str, ...]:
    """The types the new release removed, from two runs' cells ((type, column) -> Cell): the
    base's types that the new run has no cell of, or a row of which says `type-removed` (the
    weights check, loading what the base saved, finds no such type)."""
    base_types, new_types = {m for m, _ in before}, {m for m, _ in after}
    said = {m for (m, _), cell in after.items() if any(r.status is Status.TYPE_REMOVED for r in cell.results)}
    return tuple(sorted((base_types - new_types) | (base_types & said)))


def environment_changes(before: RunInfo, after: RunInfo) -> tuple[str, ...]:
    """`transformers 5.24.0 -> 5.25.0`, torch, each engine's version: what changed in the
    environment between two runs of one selection (() when nothing did)."""
    found = [f"{what} {b} -> {a}" for what, b, a in (("transformers", before.transformers, after.transformers),
                                                       ("torch", before.torch, after.torch)) if b != a]
    engines_before = {e.name: e for e in before.engines}
    for engine in after.engines:
        was = engines_before.get(engine.name)
        b, a = (_engine_version(was) if was else "absent"), _engine_version(engine)
        if b != a:
            found.append(f"{engine.title} {b} -> {a}")
    return tuple(found)


def _engine_version(engine) -> str:
    return engine.version if engine.installed else f"emulated {engine.follows}"


def _cells(run: Run) -> dict:
    return {(m, col.column): cell for m, col, cell in build_matrix([run]).cells()}


def _kind(was, cell) -> str:
    if cell.outcome is Outcome.FLAKY:
        return "flaky"
    if cell.outcome is Outcome.FINDING and (was is None or was.outcome is Outcome.PASS):
        return "new"
    if cell.outcome is Outcome.PASS and was is not None and was.outcome is Outcome.FINDING:
        return "fixed"
    if _not_reached(cell) != _not_reached(was):  # reached or not, as part of a type's change only
        return "reach"
    return ""


def _note(key, was, cell, info: RunInfo, drift: Drift) -> CellNote:
    model_type, column = key
    row = cell.result
    failing = not cell.status.ok
    return CellNote(model_type, column, was.status.value if was is not None else "", row.status.value,
                    cell.signature, row.fault if failing else "", cell.cause if failing else "",
                    _drift_text(drift, model_type), sweep_command(model_type, column, info.repeat), row.message)


def _not_reached(cell) -> bool:
    return cell is not None and cell.result.message.startswith(NOT_REACHED)


def _engine_changes(base: Run, new: Run, drift: Drift, base_cells: dict, new_cells: dict, removed: set[str]):
    before = _by_engine(verdicts([base]))
    after = _by_engine(verdicts([new]))
    for engine in new.info.engines:
        b, a = before.get(engine.name, {}), after.get(engine.name, {})
        if not a and not b:
            continue  # no verdicts of it (a sweep without the backend check): nothing to say of it
        a = {t: verdict for t, verdict in a.items() if t not in removed}  # a removed type: removed, not lost
        groups: dict[str, list[TypeChange]] = {"lost": [], "gained": [], "moved": [], "undecided": []}
        for model_type in sorted(b.keys() & a.keys()):
            kind = _verdict_kind(b[model_type], a[model_type])
            if kind:
                folded = _folded(model_type, base_cells, new_cells, b[model_type], a[model_type])
                groups[kind].append(_type_change(b[model_type], a[model_type], new.info, drift, folded))
        added = tuple(sorted(a.keys() - b.keys()))
        yield EngineChanges(engine.name, engine.title, engine.version if engine.installed else engine.follows,
                            len(b.keys() & a.keys()), *(tuple(groups[k]) for k in ("lost", "gained", "moved",
                                                                                    "undecided")),
                            added, tuple(t for t in added if a[t].serves is Serves.SERVABLE),
                            tuple(sorted(b.keys() - a.keys())))


def _by_engine(found) -> dict[str, dict[str, ServeVerdict]]:
    by: dict[str, dict[str, ServeVerdict]] = {}
    for verdict in found:
        by.setdefault(verdict.engine.name, {})[verdict.model_type] = verdict
    return by


def _verdict_kind(b: ServeVerdict, a: ServeVerdict) -> str:
    if (b.serves, b.path, b.gate) == (a.serves, a.path, a.gate):
        return ""  # the same verdict; another wording of the same stop is no change of it
    if Serves.UNDECIDED in (b.serves, a.serves):
        return "undecided"
    served = (b.serves is Serves.SERVABLE, a.serves is Serves.SERVABLE)
    return {(True, False): "lost", (False, True): "gained"}.get(served, "moved")


def _type_change(b: ServeVerdict, a: ServeVerdict, info: RunInfo, drift: Drift, folded) -> TypeChange:
    deciding = a if a.serves is not Serves.SERVABLE else b
    if a.serves is Serves.SERVABLE and b.serves is Serves.SERVABLE:
        why = f"now served {a.path or 'another way'} (was {b.path or 'served'})"
    elif a.serves is Serves.SERVABLE:
        why = f"now served{f' ({a.path})' if a.path else ''}; was {b.serves} at {b.gate}"
    else:
        why = f"now {a.serves} at {a.gate}: {cause_of(a.message, a.row.signature if a.row else '')}"
    return TypeChange(a.model_type, b.text, a.text, why, deciding.gate, deciding.fault, deciding.signature,
                      _drift_text(drift, a.model_type),
                      sweep_command(a.model_type, deciding.gate, info.repeat) if deciding.gate else "", folded)


def _folded(model_type: str, base_cells: dict, new_cells: dict, b: ServeVerdict, a: ServeVerdict) -> tuple[str, ...]:
    """The type's cells that changed with its verdict: the deciding gates, and those not reached
    on one side only."""
    columns = {col for m, col in base_cells.keys() | new_cells.keys() if m == model_type}
    return tuple(sorted(col for col in columns if col in (a.gate, b.gate)
                        or _not_reached(new_cells.get((model_type, col)))
                        != _not_reached(base_cells.get((model_type, col)))))


def _drift_text(drift: Drift, model_type: str) -> str:
    found = next((t for t in drift.types if t.model_type == model_type), None)
    if found is None:
        return ""
    own = [c.text() for c in found.changes[:3]]
    more = len(found.changes) - len(own) + found.shared
    return "; ".join(own) + (f" (+{more} more)" if more else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def text_lines(found: Changes, shown: int = 5, engines: tuple[str, ...] | None = None) -> list[str]:
    """The changes as the terminal prints them (the end of a sweep, `auditor diff`, `gate`,
    upgrade-check): the headline, a line per engine (the unchanged ones too; `engines`: only
    these), then the first `shown` new findings; each change with its fault, cause, drift and the
    command that sweeps it again."""
    lines = [found.headline()]
    for engine in found.engines:
        if engines is not None and engine.name not in engines:
            continue
        lines.append(f"  {engine.line}")
        for change in engine.type_changes:
            lines += _explained(f"    {change.model_type} {change.why}", change.fault, change.drift, change.repro)
        if engine.new_types:
            lines.append(f"    new types: {', '.join(engine.new_types)}"
                         + (f" (served: {', '.join(engine.new_served)})" if engine.new_served else ""))
        if engine.removed_types:
            lines.append(f"    removed types: {', '.join(engine.removed_types)}")
    if found.new_types and not found.engines:
        lines.append(f"  new types: {', '.join(found.new_types)}")
    for cell in found.new_findings[:shown]:
        lines += _explained(f"  new: {cell.model_type} {cell.column}: {cell.before or 'absent'} -> {cell.after}: "
                            f"{cell.text}", cell.fault, cell.drift, cell.repro)
    if len(found.new_findings) > shown:
        lines.append(f"  and {len(found.new_findings) - shown} more new findings")
    return lines


def _explained(line: str, fault: str, drift: str, repro: str) -> list[str]:
    out = [line + (f" (fault: {fault})" if fault else "")]
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    if drift:
        out.append(f"{indent}config drift: {drift}")
    if repro:
        out.append(f"{indent}again: {repro}")
    return out
