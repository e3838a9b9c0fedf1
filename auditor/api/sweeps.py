"""`auditor.sweep(...)` and what goes with it: the public names of the sweep's pipeline
(auditor/sweeping/), which the API hands out."""

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
from auditor.sweeping.run import run_request, sweep
from auditor.sweeping.validate import WORKER_LOG, validate, validated_device

__all__ = [
    "DEFAULT_CHECKS", "DEFAULT_POLICIES", "DEFAULT_TIMEOUT", "WORKER_LOG", "SweepEvents",
    "SweepOutcome", "SweepRequest", "command_line", "make_request", "run_request", "sweep", "validate",
    "validated_device",
]
