"""The Python API: what the CLI does, as documented functions that return data and raise
`AuditorError`s (the CLI is a thin layer over them that prints and picks exit codes).

    import auditor

    outcome = auditor.sweep("reports/tonight", models=["llama", "gpt2"], checks=["build", "decorate"])
    for finding in auditor.findings([outcome.run]):
        print(finding.text())
    changes = auditor.diff("reports/last-night", outcome.run)
    if changes.blocking: ...

`import auditor` is cheap: these names are loaded on first use.
"""

from auditor.api.runs import (
    baseline,
    diff,
    findings,
    gate,
    matrix,
    nightly_gate,
    read_baseline,
    read_run,
    read_runs,
    render_junit,
    render_summary,
    verdicts,
    write_diff,
    write_report,
)
from auditor.api.sweeps import (
    DEFAULT_CHECKS,
    DEFAULT_POLICIES,
    SweepEvents,
    SweepOutcome,
    SweepRequest,
    sweep,
)
from auditor.core.errors import AuditorError, InputError, RunInterrupted, RunStopped
from auditor.core.results import Result, ResultsFileError, Run, RunInfo
from auditor.core.status import Status

__all__ = [
    "DEFAULT_CHECKS", "DEFAULT_POLICIES", "AuditorError", "InputError", "Result", "ResultsFileError",
    "Run", "RunInfo", "RunInterrupted", "RunStopped", "Status", "SweepEvents", "SweepOutcome",
    "SweepRequest", "baseline", "diff", "findings", "gate", "matrix", "nightly_gate", "read_baseline",
    "read_run", "read_runs", "render_junit", "render_summary", "sweep", "verdicts", "write_diff", "write_report",
]
