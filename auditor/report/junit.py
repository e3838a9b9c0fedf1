"""JUnit XML, the format CI systems show test results from (GitHub Actions reporters,
Buildkite test analytics, GitLab, Jenkins): pure renderers, results in, text out.

For a sweep or a merged report, one `testsuite` per environment and one `testcase` per cell:
classname the model type, name the column. `build` and `compiled` pass; `skipped` cells, flaky
cells, and failures that are expected by design (the by-reference pickle of remote code) or by an
expected baseline (`--expected`), are `skipped` with their reason; every other status is a `failure` whose type is the status, whose message is
the signature and whose text is the message. For a diff, the regressions are the failures
(skipped when the allow list excuses them), and the fixes and changed failures pass with a note.

What goes into the XML is made safe for it: ElementTree escapes markup, characters that XML 1.0
cannot hold at all (most control characters) are written as `\\xNN`, and every text is bounded.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from auditor.core.fault import Fault
from auditor.core.outcome import Outcome
from auditor.core.results import Run
from auditor.report.baseline import Baseline, expected_matrix
from auditor.report.diff import CellChange, RunDiff
from auditor.report.matrix import environment_infos
from auditor.report.summary import expected_label

TEXT_LIMIT = 8000  # characters of one message in the XML; the rest is cut with a note
ATTRIBUTE_LIMIT = 500  # characters of a `message` attribute (reporters show it on one line)

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def safe_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text` as XML 1.0 can hold it, at most `limit` characters plus a note of what was cut."""
    text = _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text or "")
    if len(text) > limit:
        text = f"{text[:limit]}... [{len(text) - limit} more characters cut]"
    return text


def render_junit(runs: Sequence[Run], expected: Baseline | None = None) -> str:
    """The JUnit XML of one or more runs: the cells of their matrix (auditor.report.matrix), the
    failures the expected baseline `expected` lists skipped as expected."""
    matrix = expected_matrix(runs, expected)
    started = {env: info.started for env, info in environment_infos(runs).items()}
    root = ET.Element("testsuites", name="auditor")
    by_env: dict[str, list] = {env: [] for env in matrix.environments}
    for model_type, col, cell in matrix.cells():
        by_env[col.environment].append((model_type, col.column, cell))
    for env, cells in by_env.items():
        suite = _suite(root, env or "auditor", started.get(env, ""))
        for model_type, column, cell in cells:
            case = _case(suite, model_type, column, cell.seconds)
            message, outcome = cell.message, cell.outcome
            if outcome is Outcome.SKIPPED:
                _child(case, "skipped", message or "skipped")
            elif outcome in (Outcome.EXPECTED, Outcome.FLAKY):
                label = expected_label(matrix.baseline) if cell.by_baseline else outcome.label
                _child(case, "skipped", f"{label}: {cell.status}: {cell.signature or message}")
            elif outcome is Outcome.FINDING and cell.result.fault == Fault.AUDITOR.value:
                # The tool failed, not the model's test: an <error>, as pytest reports a broken fixture.
                _child(case, "error", cell.signature or cell.status, text=message, type=cell.status.value)
            elif outcome is Outcome.FINDING:
                _child(case, "failure", cell.signature or cell.status, text=message, type=cell.status.value)
    _totals(root)
    return _xml(root)


def render_diff_junit(diff: RunDiff) -> str:
    """The JUnit XML of a diff: a testcase per changed cell; the regressions fail."""
    root = ET.Element("testsuites", name="auditor diff")
    suite = _suite(root, f"{diff.base.name} -> {diff.new.name}", diff.new.started)
    for change in diff.regressions:
        case = _case(suite, change.model_type, change.column)
        what = f"regression: {change.before} -> {change.after}"
        if change.label:
            _child(case, "skipped", f"{what} ({change.label})")
        elif change.allowed:
            _child(case, "skipped", f"{what} (excused by the allow list)")
        else:
            _child(case, "failure", f"{what}: {change.after_signature}", text=change.after_message,
                   type=change.after)
    for kind, changes in (("fixed", diff.fixes), ("failure changed", diff.changed)):
        for change in changes:
            _note(_case(suite, change.model_type, change.column), kind, change)
    if diff.changes is not None:
        _engine_suite(root, diff)
    out = ET.SubElement(suite, "system-out")
    out.text = safe_text(
        f"{len(diff.added_types)} model types added: {', '.join(diff.added_types) or '-'}\n"
        f"{len(diff.removed_types)} model types removed: {', '.join(diff.removed_types) or '-'}\n"
        f"{diff.unchanged} cells unchanged")
    _totals(root)
    return _xml(root)


def _engine_suite(root: ET.Element, diff: RunDiff) -> None:
    """A testcase per engine and changed type (auditor.report.changes, the count every output
    prints): a type the engine lost fails unless the allow list excuses it; an engine none of
    whose types changed is one passing testcase that says so."""
    suite = _suite(root, f"engine verdicts: {diff.base.name} -> {diff.new.name}", diff.new.started)
    lost = set(diff.lost())
    for engine in diff.changes.engines:
        if not engine.type_changes and not engine.new_types and not engine.removed_types:
            case = _case(suite, engine.label, "unchanged")
            ET.SubElement(case, "system-out").text = safe_text(engine.line)
            continue
        for kind, group in (("lost", engine.lost), ("gained", engine.gained), ("moved", engine.moved),
                            ("undecided", engine.undecided)):
            for change in group:
                case = _case(suite, engine.label, change.model_type)
                detail = "\n".join(x for x in (f"fault: {change.fault}" if change.fault else "",
                                               f"config drift: {change.drift}" if change.drift else "",
                                               f"again: {change.repro}" if change.repro else "") if x)
                if kind == "lost" and change in lost:
                    _child(case, "failure", f"{kind}: {change.why}", text=detail, type=change.gate or "lost")
                elif kind == "lost":
                    _child(case, "skipped", f"{kind}: {change.why} (excused by the allow list)")
                else:
                    ET.SubElement(case, "system-out").text = safe_text(f"{kind}: {change.why}\n{detail}")
        for kind, names in (("new type", engine.new_types), ("removed type", engine.removed_types)):
            for name in names:
                case = _case(suite, engine.label, name)
                served = " (served)" if name in engine.new_served else ""
                ET.SubElement(case, "system-out").text = safe_text(f"{kind}{served}")
    ET.SubElement(suite, "system-out").text = safe_text(
        "\n".join([diff.changes.headline(), *(e.line for e in diff.changes.engines)]))


def _note(case: ET.Element, kind: str, change: CellChange) -> None:
    out = ET.SubElement(case, "system-out")
    out.text = safe_text(f"{kind}: {change.before} -> {change.after}: " + " -> ".join(change.explanation))


def _suite(root: ET.Element, name: str, timestamp: str) -> ET.Element:
    suite = ET.SubElement(root, "testsuite", name=safe_text(name, ATTRIBUTE_LIMIT))
    if timestamp:
        suite.set("timestamp", timestamp)
    return suite


def _case(suite: ET.Element, model_type: str, column: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=safe_text(model_type, ATTRIBUTE_LIMIT),
                         name=safe_text(column, ATTRIBUTE_LIMIT), time=f"{max(seconds, 0.0):.3f}")


def _child(case: ET.Element, tag: str, message: str, *, text: str = "", **attrs: str) -> None:
    element = ET.SubElement(case, tag, message=safe_text(message, ATTRIBUTE_LIMIT), **attrs)
    if text:
        element.text = safe_text(text)


def _totals(root: ET.Element) -> None:
    """The counts every reporter reads, on each testsuite and on the root."""
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    seconds = 0.0
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        counts = {"tests": len(cases), "failures": sum(1 for c in cases if c.find("failure") is not None),
                  "errors": sum(1 for c in cases if c.find("error") is not None), "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
        time = sum(float(c.get("time", "0")) for c in cases)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{time:.3f}")
        seconds += time
    for key in ("tests", "failures", "errors"):
        root.set(key, str(totals[key]))
    root.set("time", f"{seconds:.3f}")


def _xml(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

