"""Crafting runs on disk for the report tests."""

from __future__ import annotations

from pathlib import Path

from auditor.core.results import Result, ResultsWriter, RunInfo
from auditor.core.status import Status

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
