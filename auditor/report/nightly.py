"""The nightly gate: tonight's run fails the job only on confirmed, unexpected failures.

A cell of tonight's run is
* a new failure: a finding (confirmed: no rerun passed; not failing by design) that the expected
  baseline does not list; without a baseline, a finding whose cell passed the night before (with
  neither, every finding);
* flaky: it failed with a status the machine can cause and passed on a rerun (not a failure);
* expected: the baseline lists its failure;
* fixed: it passes, and the baseline lists it (the baseline is out of date: write it again), or,
  without a baseline, it failed the night before.

Pure: runs and a baseline in, a NightlyGate and its Markdown (the job's step summary) out.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.core.outcome import Outcome, Tally
from auditor.core.results import Run
from auditor.report.baseline import Baseline, expected_matrix
from auditor.report.matrix import build_matrix, run_name

LIMIT = 60_000  # GitHub's step summary takes 65,536 characters


@dataclass(frozen=True)
class GateCell:
    model_type: str
    column: str
    status: str
    signature: str = ""
    before: str = ""  # the night before's status, "" when unknown
    fault: str = ""  # whose fault tonight's row is (auditor.core.fault), "" for a pass
    cause: str = ""  # its failure's cause, one line (auditor.report.causes)


@dataclass(frozen=True)
class NightlyGate:
    name: str
    new_failures: tuple[GateCell, ...]
    fixed: tuple[GateCell, ...]
    flaky: tuple[GateCell, ...]
    expected: int
    against: str = ""  # the night before's name, "" without one
    baseline: bool = False  # whether an expected baseline was given
    counts: Tally = Tally()  # every cell of tonight's run by the outcome rule (what the other outputs print)

    @property
    def failed(self) -> bool:
        return bool(self.new_failures)


def nightly_gate(new: Run, previous: Run | None = None, baseline: Baseline | None = None) -> NightlyGate:
    before = {} if previous is None else {(m, col.column): cell for m, col, cell in build_matrix([previous]).cells()}
    new_failures, fixed, flaky, expected = [], [], [], 0
    cells = expected_matrix([new], baseline).cells()
    for model_type, col, cell in cells:
        was = before.get((model_type, col.column))
        note = GateCell(model_type, col.column, cell.status.value, cell.signature, was.status.value if was else "",
                        cell.result.fault, cell.cause if not cell.status.ok else "")
        if cell.outcome is Outcome.FLAKY:
            flaky.append(note)
        elif cell.outcome is Outcome.EXPECTED and baseline is not None and baseline.entry(model_type, col.column):
            expected += 1
        elif cell.outcome is Outcome.FINDING and (baseline is not None or was is None or was.outcome is Outcome.PASS):
            new_failures.append(note)
        elif cell.outcome is Outcome.PASS and _was_failing(baseline, was, model_type, col.column):
            fixed.append(note)
    return NightlyGate(run_name(new), tuple(new_failures), tuple(fixed), tuple(flaky), expected,
                       run_name(previous) if previous is not None else "", baseline is not None,
                       Tally.of(cell.outcome for _, _, cell in cells))


def _was_failing(baseline: Baseline | None, was, model_type: str, column: str) -> bool:
    if baseline is not None:
        return baseline.entry(model_type, column) is not None
    return was is not None and was.outcome is Outcome.FINDING


def render_gate_markdown(gate: NightlyGate, update_hint: str = "") -> str:
    """The step summary: the verdict, then new failures, fixed cells and flaky cells apart.
    `update_hint`: the command that writes the baseline again, shown when cells were fixed."""
    verdict = "FAILED" if gate.failed else "passed"
    against = f" against {_md(gate.against)}" if gate.against else ""
    lines = [f"### Nightly gate {verdict}: {_md(gate.name)}{against}", "",
             f"{len(gate.new_failures)} new failure{'s' if len(gate.new_failures) != 1 else ''}, "
             f"{len(gate.fixed)} fixed, {len(gate.flaky)} flaky (passed on a rerun)"
             + (f", {gate.expected} expected by the baseline" if gate.baseline else ""),
             "", f"Tonight: {gate.counts.text()}"]
    for title, cells in (("New failures", gate.new_failures), ("Fixed", gate.fixed),
                         ("Flaky: failed, then passed on a rerun", gate.flaky)):
        if not cells:
            continue
        lines += ["", f"#### {title} ({len(cells)})", "", "| model type | column | night before | now | signature |",
                  "|---|---|---|---|---|"]
        lines += [f"| {_md(c.model_type)} | {_md(c.column)} | {c.before or '—'} | {c.status} | {_md(c.signature)} |"
                  for c in cells]
        if title == "Fixed" and gate.baseline and update_hint:
            lines += ["", f"The baseline still lists these: update it with `{update_hint}`."]
    text = "\n".join(lines) + "\n"
    return text if len(text) <= LIMIT else text[:LIMIT - 40] + "\n\n… (cut to fit a step summary)\n"


def render_gate_text(gate: NightlyGate) -> str:
    """One line per new failure, for the terminal."""
    verdict = "FAILED" if gate.failed else "passed"
    lines = [f"nightly gate {verdict}: {len(gate.new_failures)} new failures, {len(gate.fixed)} fixed, "
             f"{len(gate.flaky)} flaky" + (f", {gate.expected} expected" if gate.baseline else ""),
             f"  tonight: {gate.counts.text()}"]
    lines += [f"  new failure: {c.model_type} {c.column} ({c.status}) {c.signature}".rstrip() for c in gate.new_failures]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")

