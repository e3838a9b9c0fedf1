"""One verdict per model type and serving engine: would the engine serve it, and compile it?

A verdict is a reading of several rows, not a row: the backend check writes one row per gate, and
the verdict is the first gate the engine stops at, in the engine's order: a stopping gate that
failed, or a gate whose step raised (the engine's constructor raises with it, even at a gate that
stops nothing by its answer; EngineInfo.stops_at, the one rule). It is therefore a
table derived here, by the report layer, from the rows and from what the run's header recorded
of each engine (auditor.core.engineinfo: its gates in order and which of them stop it, the
engine's own rule, never a copy), and it is written apart (serve.csv) instead of as matrix
columns: the matrix holds one row's status per cell, and the diff, the nightly history,
`--fail-on` and JUnit count its cells, so a verdict there would count every stopped type twice
(a finding in its gate's column and again in its verdict's).

Where the run has the engine's whole answer (the `serves` check's row, `serves/<engine>`: its
own code picking native or the Transformers backend, auditor/checks/serves.py), the verdict is
that row's: "servable: native Gemma3ForCausalLM", "servable: Transformers backend (...)", where it
stops, or undecided for this machine's limit. Otherwise it is the Transformers backend's, read
from the backend rows: the engine's own-code rows (policy `EngineInfo.policy`) where the run has
them (the engine's functions are the reference the emulation is held to), the emulation's
otherwise, and says which. A stopping gate that failed for the machine's reasons (a timeout, a missing
package, the auditor's own error) decides nothing: the type is `undecided`, counted apart.
Whether the engine would compile a type comes from the compile check's rows of a run that
compiled with that engine's semantics (`--compile-semantics`), and is left blank otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from auditor.core.engineinfo import EngineInfo
from auditor.core.fault import Fault
from auditor.core.outcome import CellVerdict, Outcome, judge
from auditor.core.results import Result, Run
from auditor.core.status import ENVIRONMENTAL, Status
from auditor.report.causes import cause_of
from auditor.report.matrix import cell_claims, environment_infos

# A stopping gate that failed with one of these is the machine's or the auditor's failure, or
# the auditor could not make the model's default config: the engine's answer is unknown.
UNDECIDED = ENVIRONMENTAL | {Status.TIMEOUT, Status.CRASH, Status.AUDITOR_ERROR, Status.CONFIG_ERROR}
# Whose failures decide nothing about the engine (auditor.core.fault): this machine's, ours.
_NOT_A_VERDICT = {Fault.ENVIRONMENT.value, Fault.AUDITOR.value}


class Serves(str, Enum):
    SERVABLE = "servable"
    STOPS = "stops"
    UNDECIDED = "undecided"

    def __str__(self) -> str:
        return self.value


class Compiles(str, Enum):
    """The compile check's answer for a type the engine serves, under the engine's semantics."""

    YES = "compiles"
    NO = "does not compile"
    NOT_COMPILED = "not compiled"  # every compile row skipped: compile turned off, no tiny model, ...
    UNDECIDED = "undecided"  # a row failed for the machine's reasons (UNDECIDED), none for the model's

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ServeVerdict:
    environment: str
    model_type: str
    engine: EngineInfo
    serves: Serves
    own: bool  # read from the engine's own-code rows (else the emulation's)
    gate: str = ""  # the deciding gate's column, when the type is not servable
    status: Status | None = None  # that gate's status
    message: str = ""  # that gate's message (the engine's own, for `unsupported`)
    compiles: Compiles | None = None  # None: not checked under this engine's semantics
    compile_note: str = ""  # which compile column failed and how, or why nothing compiled
    row: Result | None = None  # the deciding row: the gate that stopped it, or the serves row
    path: str = ""  # how the engine serves it, from the serves row: "native X", "Transformers backend (X)"

    @property
    def whole(self) -> bool:
        """From the engine's whole answer (the serves row), not the backend's gates alone."""
        return self.gate == serves_column(self.engine) or bool(self.path)

    @property
    def native(self) -> bool:
        """Served by the engine's own (native) class, per its serves row."""
        return self.row is not None and self.row.extras.get("impl") == "native" and self.serves is Serves.SERVABLE

    @property
    def signature(self) -> str:
        """The cause of the stop (auditor.report.causes): what stops are grouped by."""
        return cause_of(self.message, self.row.signature if self.row is not None else "")

    @property
    def fault(self) -> str:
        """Whose fault the stop is, where the rows say (`model`, `engine`, ...; "" before they did)."""
        return getattr(self.row, "fault", "") or ""

    @property
    def text(self) -> str:
        """`servable`, `stops at backend/attention: <the engine's message>`, `undecided: ...`."""
        if self.serves is Serves.SERVABLE:
            return f"{Serves.SERVABLE}: {self.path}" if self.path else str(Serves.SERVABLE)
        if self.serves is Serves.STOPS:
            return f"stops at {self.gate}: {self.message}"
        return f"undecided: {self.gate}: {self.status}: {self.message}"

    @property
    def compile_text(self) -> str:
        if self.compiles is None:
            return ""
        return f"{self.compiles}: {self.compile_note}" if self.compile_note else str(self.compiles)


def verdicts(runs: Sequence[Run]) -> tuple[ServeVerdict, ...]:
    """One verdict per environment, engine the run recorded, and model type with its backend
    rows; in environment, engine and model type order."""
    by_env: dict[str, dict[str, dict[str, CellVerdict]]] = {}
    for (env, model_type, column), claims in cell_claims(runs).items():
        by_env.setdefault(env, {}).setdefault(model_type, {})[column] = judge(claims)  # the one cell rule
    found = []
    for env, info in environment_infos(runs).items():
        types = by_env.get(env, {})
        compiled_as = info.compile_semantics
        for engine in info.engines:
            for model_type in sorted(types):
                verdict = _verdict(env, model_type, engine, types[model_type])
                if verdict is not None:
                    if compiled_as == engine.name and verdict.serves is Serves.SERVABLE:
                        verdict = _with_compile(verdict, types[model_type])
                    found.append(verdict)
    return tuple(found)


def _gate_columns(engine: EngineInfo, own: bool) -> list[tuple[str, str]]:
    """(gate, its column) of an engine's rows: `backend/<gate>`, or `backend/<gate>/<policy>`."""
    suffix = f"/{engine.policy}" if own else ""
    return [(gate, f"backend/{gate}{suffix}") for gate in engine.gates]


def serves_column(engine: EngineInfo) -> str:
    """The column of the engine's whole answer: the serves check's row (`serves/vllm`)."""
    return f"serves/{engine.name}"


def _verdict(env: str, model_type: str, engine: EngineInfo, rows: dict[str, CellVerdict]) -> ServeVerdict | None:
    whole = _whole(env, model_type, engine, rows.get(serves_column(engine)))
    if whole is not None:
        return whole
    own = bool(engine.policy) and any(column in rows for _, column in _gate_columns(engine, True))
    return _gated(env, model_type, engine, rows, own)


def whole_and_emulated(runs: Sequence[Run], engine_name: str) -> tuple[tuple[ServeVerdict, ServeVerdict], ...]:
    """Per environment and model type with both: the engine's whole answer (its own construction,
    the serves row) and the emulated gates' verdict (the backend check's rows without a policy):
    what `auditor agree` holds the emulation to."""
    by_env: dict[str, dict[str, dict[str, CellVerdict]]] = {}
    for (env, model_type, column), claims in cell_claims(runs).items():
        by_env.setdefault(env, {}).setdefault(model_type, {})[column] = judge(claims)
    pairs = []
    for env, info in environment_infos(runs).items():
        for engine in (e for e in info.engines if e.name == engine_name):
            for model_type, rows in sorted(by_env.get(env, {}).items()):
                whole = _whole(env, model_type, engine, rows.get(serves_column(engine)))
                emulated = _gated(env, model_type, engine, rows, False)
                if whole is not None and emulated is not None:
                    pairs.append((whole, emulated))
    return tuple(pairs)


def _gated(env: str, model_type: str, engine: EngineInfo, rows: dict[str, CellVerdict],
           own: bool) -> ServeVerdict | None:
    """The verdict of the engine's gates (its own functions' rows, or the emulation's); None where
    the backend check did not run on the type."""
    columns = _gate_columns(engine, own)
    if not any(column in rows for _, column in columns):
        return None  # the backend check did not run on this type
    for gate, column in columns:
        cell = rows.get(column)
        if cell is None or cell.outcome is not Outcome.FINDING or not engine.stops_at(gate, True, cell.row.extras):
            continue
        row = cell.row
        serves = Serves.UNDECIDED if row.status in UNDECIDED else Serves.STOPS
        return ServeVerdict(env, model_type, engine, serves, own, column, row.status, row.message, row=row)
    return ServeVerdict(env, model_type, engine, Serves.SERVABLE, own)


def _whole(env: str, model_type: str, engine: EngineInfo, cell: CellVerdict | None) -> ServeVerdict | None:
    """The verdict of the engine's own serves row; None where there is none, or it was skipped
    (no architecture to give the engine: the backend's gates answer instead)."""
    if cell is None or cell.outcome in (Outcome.SKIPPED, Outcome.EXPECTED):
        return None
    row = cell.row
    column = serves_column(engine)
    if cell.outcome is Outcome.PASS:
        return ServeVerdict(env, model_type, engine, Serves.SERVABLE, True, row=row,
                            path=row.message.removeprefix(f"{Serves.SERVABLE}: "))
    undecided = cell.outcome is Outcome.FLAKY or row.status in UNDECIDED or row.fault in _NOT_A_VERDICT
    return ServeVerdict(env, model_type, engine, Serves.UNDECIDED if undecided else Serves.STOPS, True, column,
                        row.status, row.message, row=row)


def _with_compile(verdict: ServeVerdict, cells: dict[str, CellVerdict]) -> ServeVerdict:
    """The verdict with the compile check's answer: its own-code rows where there are any."""
    outcome_of = {column: cell.outcome for column, cell in cells.items()}
    compile_rows = {column: cell.row for column, cell in cells.items() if cell.row.check == "compile"}
    own = {c: r for c, r in compile_rows.items() if r.policy == verdict.engine.policy}
    chosen = own or {c: r for c, r in compile_rows.items() if r.policy != verdict.engine.policy}
    if not chosen:
        return verdict
    outcomes = {column: outcome_of[column] for column in sorted(chosen)}
    failing = [column for column, o in outcomes.items() if o is Outcome.FINDING]
    decided = [column for column in failing if chosen[column].status not in UNDECIDED]
    if failing:
        column = (decided or failing)[0]
        compiles, note = (Compiles.NO if decided else Compiles.UNDECIDED), f"{column}: {chosen[column].status}"
    elif any(o is Outcome.PASS for o in outcomes.values()):
        compiles, note = Compiles.YES, ""
    else:
        compiles, note = Compiles.NOT_COMPILED, next(iter(sorted(chosen.items())))[1].message
    return replace(verdict, compiles=compiles, compile_note=note)


def unreachable(runs: Sequence[Run]) -> dict[tuple[str, str], str]:
    """(environment, model type) -> how every engine the run checked stops it ("vLLM stops at
    backend/registry (unsupported)"), for the types no engine serves: their decorate cells are
    verdicts no user of those engines reaches, and the report keeps them and marks them. A type
    one engine serves stays unmarked."""
    by_type: dict[tuple[str, str], list[ServeVerdict]] = {}
    for verdict in verdicts(runs):
        by_type.setdefault((verdict.environment, verdict.model_type), []).append(verdict)
    return {key: "; ".join(f"{v.engine.title} stops at {v.gate} ({v.status})" for v in found)
            for key, found in by_type.items() if all(v.serves is Serves.STOPS for v in found)}


@dataclass(frozen=True)
class EngineTally:
    """One engine's verdicts in one environment, as the headline counts them."""

    engine: EngineInfo
    own: bool
    served: tuple[str, ...]
    stopped: tuple[ServeVerdict, ...]
    undecided: tuple[ServeVerdict, ...]
    compiled: tuple[str, ...] | None  # of `served`, the types that compile; None: not checked
    native: tuple[str, ...] = ()  # of `served`, the types the engine's own class serves (serves rows)
    whole: bool = False  # read from the engine's whole answer (serves rows), not the backend's gates

    @property
    def total(self) -> int:
        return len(self.served) + len(self.stopped) + len(self.undecided)

    def label(self, first: bool = False) -> str:
        """`vLLM 0.33.0 (Transformers backend, emulated)`: the version the verdicts claim (the
        installed one for the engine's own code, which validation holds to the followed release;
        the followed one for the emulation)."""
        version = self.engine.version if self.own else self.engine.follows
        if self.whole:
            return f"{self.engine.title} {version} (own code{', native or Transformers backend' if first else ''})"
        source = "own code" if self.own else "emulated"
        return f"{self.engine.title} {version} ({'Transformers backend, ' if first else ''}{source})"

    @property
    def unserved_title(self) -> str:
        """The title of the folded list of the types it does not serve: `vLLM 0.33.0 (emulated)
        stops 1 model type` (and how many are undecided)."""
        stopped = len(self.stopped)
        text = f"{self.label()} stops {stopped} model type{'s' if stopped != 1 else ''}"
        return text + (f"; {len(self.undecided)} undecided" if self.undecided else "")

    def counts(self, first: bool) -> str:
        """`would serve 2 of 3 model types (1 of them compile; 1 undecided)`, or just `2` after
        the first engine of a line."""
        served = len(self.served)
        text = f"would serve {served} of {self.total} model types" if first else str(served)
        notes = [*((f"{len(self.native)} native, {served - len(self.native)} by the Transformers backend",)
                   if self.whole and served else ()),
                 *((f"{len(self.compiled)} of them compile",) if self.compiled is not None else ()),
                 *((f"{len(self.undecided)} undecided",) if self.undecided else ())]
        return text + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class Headline:
    """The verdict line of one environment, and the lists it folds."""

    environment: str
    tallies: tuple[EngineTally, ...]
    only: tuple[tuple[str, tuple[str, ...]], ...]  # (engine, the types it alone serves), with 2+ engines

    @property
    def split(self) -> tuple[str, ...]:
        """The types some engine serves and another does not."""
        return tuple(sorted({t for _, types in self.only for t in types}))

    @property
    def text(self) -> str:
        """`vLLM 0.33.0 (Transformers backend, emulated) would serve 3 of 4 model types; SGLang
        0.5.23 (emulated) 2; 1 that one serves and the other does not`."""
        parts = [f"{tally.label(i == 0)} {tally.counts(i == 0)}" for i, tally in enumerate(self.tallies)]
        if len(self.tallies) > 1:
            who = "one serves and the other does not" if len(self.tallies) == 2 else "some serve and others do not"
            parts.append(f"{len(self.split)} that {who}")
        return "; ".join(parts)


def headlines(found: Sequence[ServeVerdict]) -> tuple[Headline, ...]:
    """One headline per environment that has verdicts, in the order of `found`."""
    by_env: dict[str, dict[str, list[ServeVerdict]]] = {}
    for verdict in found:
        by_env.setdefault(verdict.environment, {}).setdefault(verdict.engine.name, []).append(verdict)
    result = []
    for env, by_engine in by_env.items():
        tallies = tuple(_tally(group) for group in by_engine.values())
        served = {tally.engine.title: set(tally.served) for tally in tallies}
        only = tuple((title, tuple(sorted(types - set().union(*(s for t, s in served.items() if t != title)))))
                     for title, types in served.items()) if len(tallies) > 1 else ()
        result.append(Headline(env, tallies, only))
    return tuple(result)


def _tally(group: Sequence[ServeVerdict]) -> EngineTally:
    served = tuple(v.model_type for v in group if v.serves is Serves.SERVABLE)
    checked = [v for v in group if v.serves is Serves.SERVABLE and v.compiles is not None]
    return EngineTally(
        engine=group[0].engine, own=group[0].own, served=served,
        stopped=tuple(v for v in group if v.serves is Serves.STOPS),
        undecided=tuple(v for v in group if v.serves is Serves.UNDECIDED),
        compiled=tuple(v.model_type for v in checked if v.compiles is Compiles.YES) if checked else None,
        native=tuple(v.model_type for v in group if v.native), whole=any(v.whole for v in group))


@dataclass(frozen=True)
class GateStops:
    """The types one engine stops at one of its gates, grouped by cause, most first."""

    gate: str  # the gate's column (`backend/registry`)
    count: int
    causes: tuple[tuple[str, tuple[str, ...]], ...]  # (cause, the model types), most first


def where_stopped(tally: EngineTally) -> tuple[GateStops, ...]:
    """Where an engine stops types: gate by gate in the engine's order (its record's `gates`),
    each with the causes of its stops; the undecided last, under `undecided`."""
    order = {column: i for i, (_, column) in enumerate(_gate_columns(tally.engine, tally.own))}
    found = []
    for gate, group in _by(tally.stopped, _stopped_at, key=lambda gate: (order.get(gate, len(order)), gate)):
        found.append(_stops(gate, group))
    if tally.undecided:
        found.append(_stops("undecided", tally.undecided))
    return tuple(found)


def _stopped_at(verdict: ServeVerdict) -> str:
    """The row of the where-they-stop table a stop is counted in: its gate's column, and for the
    engine's whole answer the engine's step its serves row names (`serves/vllm (registry)`,
    `serves/vllm (layer fused_moe)`), as the backend's gates are split."""
    step = verdict.row.extras.get("step", "") if verdict.whole and verdict.row is not None else ""
    return f"{verdict.gate} ({step})" if step else verdict.gate


def _stops(gate: str, group: Sequence[ServeVerdict]) -> GateStops:
    causes = _by(group, lambda v: v.signature)
    ordered = sorted(causes, key=lambda kv: (-len(kv[1]), kv[0]))
    return GateStops(gate, len(group), tuple((cause, tuple(v.model_type for v in vs)) for cause, vs in ordered))


def _by(items, what, key=lambda k: k):
    groups: dict = {}
    for item in items:
        groups.setdefault(what(item), []).append(item)
    return sorted(groups.items(), key=lambda kv: key(kv[0]))
