"""`auditor.sweep(...)` and what goes with it: the public names of the sweep's pipeline
(auditor/sweeping/), which the API hands out; a sweep with `engines` (`--engine vllm==0.34.0`)
goes through auditor.environments.engine_sweeps.run_sweep (the one place that chooses here or in
the engines' venvs), as every sweep does."""

from __future__ import annotations

from auditor.sweeping.events import SweepEvents, SweepOutcome
from auditor.sweeping.options import (
    DEFAULT_CHECKS,
    DEFAULT_POLICIES,
    DEFAULT_TIMEOUT,
    SweepRequest,
    command_line,
    make_request,
)
from auditor.sweeping.validate import WORKER_LOG, validate, validated_device


def run_request(request: SweepRequest, events: SweepEvents, rules: tuple = (), expected=None,
                engine_events=None) -> SweepOutcome:
    """The steps of a sweep (auditor.sweeping.run.run_request); with `request.engines`, the
    engines' venvs too (what their installs and sweeps do goes to `engine_events`, an
    auditor.environments.runner.SideEvents): its outcome is this environment's, its files and
    gate over every run."""
    from auditor.environments.engine_sweeps import run_sweep

    return run_sweep(request, events, engine_events, rules=rules, expected=expected).sweep_outcome


def sweep(output=None, *, events: SweepEvents | None = None, fail_on=(), expected=None, **options) -> SweepOutcome:
    """Run a sweep and write its files; see `SweepRequest` for the options (auditor.sweeping.run.sweep),
    `engines` included."""
    from auditor.report.baseline import read_baseline
    from auditor.report.gate import parse_fail_on

    request = make_request(output=output, **options)
    return run_request(request, events or SweepEvents(), parse_fail_on(fail_on), read_baseline(expected))


__all__ = [
    "DEFAULT_CHECKS", "DEFAULT_POLICIES", "DEFAULT_TIMEOUT", "WORKER_LOG", "SweepEvents",
    "SweepOutcome", "SweepRequest", "command_line", "make_request", "run_request", "sweep", "validate",
    "validated_device",
]
