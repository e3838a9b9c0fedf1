"""Since the last run: what changed in a run's cells against an earlier run of the same sweep.

The nightly gate's reading (auditor.report.nightly) without a baseline: a *new finding* is a
finding whose cell passed, or was absent, in the earlier run; *fixed* is a pass whose cell was a
finding; *flaky* is a cell that failed and passed on a rerun. Reports show it right after the
verdicts (a report answers what changed before it lists), when they are given an earlier run.

Which run is the earlier one is a rule of this module too (`same_environment`): a reports folder
may hold the nightly runs of several Pythons, releases or labels side by side, and a run compared
with another environment's would list every difference between the environments as a change.
Pure: runs in, a NightlyGate out (report/files.py reads the reports folder).
"""

from __future__ import annotations

from collections.abc import Sequence

from auditor.core.results import Run, RunInfo
from auditor.report.nightly import NightlyGate, nightly_gate

SHOWN = 10  # cells listed per kind of change; the diff (`auditor diff`) has them all


def since(runs: Sequence[Run], previous: Run | None) -> NightlyGate | None:
    """The changes of a single run against `previous`; None without one, or for merged runs."""
    if previous is None or len(runs) != 1:
        return None
    return nightly_gate(runs[0], previous)


def same_environment(info: RunInfo, other: RunInfo) -> bool:
    """Whether a run of `other`'s header is one a run of `info`'s may be compared with: the same
    Python (minor), torch, transformers, installed serving engines, label, shard (a shard of a
    split sweep holds other model types than the next shard's) and checks (a run of other checks
    would make every cell of this one's new)."""
    return _environment(info) == _environment(other)


def _environment(info: RunInfo) -> tuple:
    return (info.python_minor, info.torch, info.transformers, tuple(sorted(info.installed_engines.items())),
            info.label, info.shard, tuple(sorted(info.checks)))
