"""Crafting runs on disk for the report tests."""

from __future__ import annotations

from pathlib import Path

from auditor.core.results import Result, RunInfo
from auditor.core.status import Status
from auditor.core.writing import ResultsWriter

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "report"


def run_info(**overrides) -> RunInfo:
    values = dict(
        python="3.11.7", torch="2.13.0+cpu", transformers="5.24.0", accelerate="1.15.0", cloudpickle="3.1.3",
        platform="Linux-x86_64", device="meta", auditor="0.1.0", git_revision="abc1234",
        command="auditor sweep", started="2026-11-30T02:00:00+00:00", hostname="ci", checks=("build",),
    )
    values.update(overrides)
    return RunInfo(**values)


def result(model_type: str, status: str, check: str = "build", policy: str = "", component: str = "",
           signature: str = "", message: str = "") -> Result:
    return Result(model_type=model_type, check=check, status=Status(status), policy=policy, component=component,
                  signature=signature, message=message or signature or f"{model_type} {status}", seconds=0.25)


def counts_text(counts) -> str:
    """`498 build · 4 refused · 55 error`: a Counts as a person would read it."""
    return " · ".join(f"{n} {s}" for s, n in counts.items) or "no results"


def failure_count(counts) -> int:
    return sum(n for s, n in counts.items if not Status(s).ok)


def write_run(directory: Path, results: list[Result], **info) -> Path:
    """A run directory holding a results.jsonl with `results`; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    with ResultsWriter(directory / "results.jsonl", run_info(**info)) as writer:
        writer.write_all(results)
    return directory


def message_text(messages: list, number: int) -> str:
    """A message of a report.html's data, whole again, as its script's `message()` makes it: an
    entry `[base, head, tail, middle]` is the whole message `base` cut around `middle`."""
    entry = messages[number]
    if isinstance(entry, str):
        return entry
    base, head, tail, middle = entry
    text = messages[base]
    return text[:head] + middle + text[len(text) - tail:]


def page_cells(html: str) -> dict[tuple[str, str], dict]:
    """The matrix cells of a report.html, decoded from its embedded data as its script decodes
    them: (model type, column) -> status, outcome, the status a baseline relabelled, the text in
    the cell, its title and its unreachable gate."""
    import json

    start = html.index('<script type="application/json" id="report-data">')
    text = html[html.index(">", start) + 1:html.index("</script>", start)]
    data = json.loads(text)
    cells = {}
    for model_type, entries, *_ in data["rows"]:  # a third item: the engines' verdicts
        for column, entry in zip(data["columns"], entries, strict=True):
            if not entry:
                continue
            kind = data["kinds"][(entry if isinstance(entry, int) else entry[0]) - 1]
            kind = kind + [0, "", -1][len(kind) - 4:]  # the trailing defaults the page leaves out
            gate = data["gates"][kind[6]] if kind[6] >= 0 else ""
            was = kind[5]
            cells[(model_type, column["column"])] = {
                "s": data["order"][kind[0]], "o": data["outcomes"][kind[1]], "was": was, "disagree": bool(kind[4]),
                "text": data["short"][kind[0]] + ("†" if gate else ""), "gate": gate,
                "message": message_text(data["messages"], kind[2]),
                "title": (f"{data['relabel']}: {was} · " if was else "") + data["titles"][kind[3]]
                + (f" · unreachable: {gate}" if gate else "")}
    return cells
