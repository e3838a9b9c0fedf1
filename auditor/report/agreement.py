"""Do two decorator policies agree? The fidelity check of `legacy` against the real vLLM decorator,
and of an engine's emulated gates against its own construction.

Pure: a run in, the cells where the two policies disagree out (status, or the refusal
message, which must match word for word); and, where the run has the engine's whole answer (its
serves rows), the types whose emulated verdict is another, each with the release record's reason
where it gives one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from auditor.core.results import Result, Run
from auditor.core.status import Status
from auditor.report.matrix import run_cells
from auditor.report.serve import Serves, ServeVerdict, whole_and_emulated


@dataclass(frozen=True)
class Disagreement:
    model_type: str
    check: str
    component: str
    first: Result | None
    second: Result | None

    @property
    def what(self) -> str:
        if self.first is None or self.second is None:
            return "only one policy has this cell"
        if self.first.status != self.second.status:
            return f"{self.first.status.value} vs {self.second.status.value}"
        return "same status, different message"


# A side with one of these did not answer: this machine's limits (memory, time) or the auditor's
# own failure stopped it before the engine's code said anything; such a cell is listed apart,
# neither agreeing nor disagreeing (an engine that really dies is a `crash`, and compared).
UNANSWERED = frozenset({Status.OOM, Status.TIMEOUT, Status.AUDITOR_ERROR})


@dataclass(frozen=True)
class Agreement:
    first: str
    second: str
    compared: int
    disagreements: tuple[Disagreement, ...]
    unanswered: tuple[Disagreement, ...] = ()  # cells one side could not answer (UNANSWERED)

    @property
    def agrees(self) -> bool:
        return not self.disagreements


def missing_policies(run: Run, first: str, second: str) -> list[str]:
    """The policies of the two that have no rows in `run`. The emulation's policy-less rows of
    a cell that `second` also has stand for `first` (as in compare_policies): a run of the
    backend check alone has no `legacy` rows, and its gates are still compared."""
    present = {r.policy for r in run.results}
    seconds = {(r.model_type, r.check, r.component) for r in run.results if r.policy == second}
    if first not in present and any(not r.policy and (r.model_type, r.check, r.component) in seconds
                                    for r in run.results):
        present.add(first)
    return [name for name in (first, second) if name not in present]


def compare_policies(run: Run, first: str, second: str) -> Agreement:
    """The cells of `first` and `second` (the matrix's cells: the first row of a cell wins),
    paired by model type, check and component."""
    cells: dict[tuple[str, str, str], dict[str, Result]] = {}
    for result in run_cells(run).values():
        if result.policy in (first, second, ""):
            cells.setdefault((result.model_type, result.check, result.component), {})[result.policy] = result
    disagreements, unanswered = [], []
    compared = 0
    for (model_type, check, component), pair in sorted(cells.items()):
        if first not in pair and second not in pair:
            continue  # a cell no policy changes and neither side computed (build, pickle, another engine's gates)
        compared += 1
        # A cell without a policy is the auditor's own emulation (the backend check's gates,
        # which no decorator policy changes); it stands for `first` beside vLLM's own row.
        a, b = pair.get(first, pair.get("")), pair.get(second)
        if a is None or b is None or a.status != b.status or (a.status is Status.REFUSED and a.message != b.message):
            apart = a is not None and b is not None and {a.status, b.status} & UNANSWERED
            (unanswered if apart else disagreements).append(Disagreement(model_type, check, component, a, b))
    return Agreement(first, second, compared - len(unanswered), tuple(disagreements), tuple(unanswered))


@dataclass(frozen=True)
class VerdictDifference:
    """A type whose emulated verdict differs from the engine's own construction's."""

    model_type: str
    own: str  # the engine's own answer: `servable: ...`, `stops at serves/sglang: ...`
    emulated: str  # the emulated gates': `servable`, `stops at backend/sglang/tp-plan: ...`
    why: str = ""  # the release record's reason; "": unexplained


@dataclass(frozen=True)
class VerdictAgreement:
    """The emulated gates against the engine's own construction, type by type (servable or stops;
    an undecided side is not compared)."""

    engine: str
    compared: int
    differences: tuple[VerdictDifference, ...]
    # Types the engine built with a class of its own (its serves row's impl `native`): not compared,
    # since the emulated gates are its Transformers backend's, which such a type never meets.
    native: tuple[str, ...] = ()

    @property
    def unexplained(self) -> tuple[VerdictDifference, ...]:
        return tuple(d for d in self.differences if not d.why)


def compare_verdicts(run: Run, engine: str, explained: Mapping[str, str]) -> VerdictAgreement | None:
    """`engine`'s own construction (serves rows) against its emulated gates over the run's types;
    `explained`: model type -> why they differ (the release record's `differs`). None where the
    run has no serves rows of the engine beside its emulated gates."""
    pairs = whole_and_emulated([run], engine)
    if not pairs:
        return None
    native = tuple(own.model_type for own, _ in pairs if _built_natively(own))
    decided = [(own, emulated) for own, emulated in pairs
               if Serves.UNDECIDED not in (own.serves, emulated.serves) and own.model_type not in native]
    differences = tuple(VerdictDifference(own.model_type, own.text, emulated.text, explained.get(own.model_type, ""))
                        for own, emulated in decided if own.serves is not emulated.serves)
    return VerdictAgreement(pairs[0][0].engine.title, len(decided), differences, native)


def _built_natively(own: ServeVerdict) -> bool:
    """The engine's own construction took its native class for the type (served or not)."""
    return own.row is not None and own.row.extras.get("impl") == "native"


def render_verdicts(agreement: VerdictAgreement) -> str:
    count = len(agreement.differences)
    lines = [f"## {agreement.engine}'s own construction against its emulated gates\n",
             f"{agreement.compared} types compared, {count} differ, {len(agreement.unexplained)} of them unexplained "
             "(the release record's `differs` gives the reason of the others).\n"]
    if agreement.native:
        lines.append(f"Not compared: {len(agreement.native)} types {agreement.engine} built with a class of its own "
                     "(native), which never meet the Transformers backend's gates that the emulation copies: "
                     f"{', '.join(agreement.native)}.\n")
    if agreement.differences:
        lines += ["| model type | own construction | emulated gates | why (release record) |", "|---|---|---|---|"]
        lines += [f"| {d.model_type} | {_text(d.own)[:200]} | {_text(d.emulated)[:200]} | "
                  f"{_text(d.why) or '**unexplained**'} |" for d in agreement.differences]
    return "\n".join(lines) + "\n"


def _text(text: str) -> str:
    return text.replace("|", "\\|")


@dataclass(frozen=True)
class RunDifference:
    """A type an answer before the first token calls servable, whose real run by the engine (an
    `outputs` row) refuses, raises or differs from transformers."""

    model_type: str
    column: str  # the outputs row's: outputs/vllm, outputs/vllm/transformers
    answered: str  # who called it servable: "serves/vllm: servable: native GPT2LMHeadModel", "emulated gates"
    ran: Result


def compare_runs(run: Run, engine: str) -> tuple[RunDifference, ...]:
    """`engine`'s real runs (the outputs check's rows) against the answers that stop before the first
    token: its native path's row against its own construction (serves/<engine>), its Transformers
    backend's row against the emulated gates (the backend check). A pair is listed where the answer
    is servable and the run is neither `same` nor a limit of the machine (undecided) nor skipped."""
    by_type: dict[str, dict[str, Result]] = {}
    for row in run.results:
        if row.check in ("outputs", "serves"):
            by_type.setdefault(row.model_type, {})[row.column] = row
    emulated = {own.model_type: gates for own, gates in whole_and_emulated([run], engine)}
    differences = []
    for model_type, rows in sorted(by_type.items()):
        serves = rows.get(f"serves/{engine}")
        gates = emulated.get(model_type)
        answers = ((f"outputs/{engine}", f"serves/{engine}: {serves.message}" if serves is not None
                    and serves.status is Status.BUILD else ""),
                   (f"outputs/{engine}/transformers", "the emulated Transformers backend gates: servable"
                    if gates is not None and gates.serves is Serves.SERVABLE else ""))
        for column, answered in answers:
            ran = rows.get(column)
            if answered and ran is not None and ran.status not in (Status.SAME, Status.SKIPPED, Status.UNDECIDED):
                differences.append(RunDifference(model_type, column, answered, ran))
    return tuple(differences)


def render_runs(engine: str, differences: tuple[RunDifference, ...]) -> str:
    lines = [f"## {engine}'s real runs against the answers before the first token\n",
             f"{len(differences)} types called servable that the engine's real run refuses or serves otherwise "
             "than transformers (the outputs check's rows).\n"]
    if differences:
        lines += ["| model type | run | called servable by | the run |", "|---|---|---|---|"]
        lines += [f"| {d.model_type} | {d.column} | {_text(d.answered)[:120]} | {d.ran.status.value}: "
                  f"{_text(d.ran.message)[:200]} |" for d in differences]
    return "\n".join(lines) + "\n"


def render_markdown(agreement: Agreement) -> str:
    head = (f"# `{agreement.first}` against `{agreement.second}`\n\n"
            f"{agreement.compared} cells compared, {len(agreement.disagreements)} disagree.\n")
    if agreement.unanswered:
        types = sorted({d.model_type for d in agreement.unanswered})
        count = len(agreement.unanswered)
        head += (f"{count} cell{'s' * (count != 1)} of {len(types)} model type{'s' * (len(types) != 1)} not "
                 "compared: one side did not answer (out of memory, out of time, or the auditor's own error): "
                 f"{', '.join(types)}.\n")
    lines = [head]
    for title, cells in (("Disagreements", agreement.disagreements), ("Not compared", agreement.unanswered)):
        if cells:
            lines += [f"## {title}\n", f"| model type | cell | {agreement.first} | {agreement.second} | what |",
                      "|---|---|---|---|---|"]
            lines += [f"| {d.model_type} | {d.check}/{d.component} | {_cell(d.first)} | {_cell(d.second)} | {d.what} |"
                      for d in cells]
    return "\n".join(lines) + ("\n" if len(lines) > 1 else "")


def _cell(result: Result | None) -> str:
    if result is None:
        return "—"
    message = result.message.replace("|", "\\|")
    return f"{result.status.value}: {message[:160]}" if not result.status.ok else result.status.value
