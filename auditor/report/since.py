"""Since the last run: what changed in a run's cells against an earlier run of the same sweep.

The nightly gate's reading (auditor.report.nightly) without a baseline: a *new finding* is a
finding whose cell passed, or was absent, in the earlier run; *fixed* is a pass whose cell was a
finding; *flaky* is a cell that failed and passed on a rerun. Reports show it right after the
verdicts (a report answers what changed before it lists), when they are given an earlier run.
Pure: runs in, a NightlyGate out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from auditor.core.results import RESULTS_FILE, Run
from auditor.report.nightly import NightlyGate, nightly_gate

SHOWN = 10  # cells listed per kind of change; the diff (`auditor diff`) has them all


def since(runs: Sequence[Run], previous: Run | None) -> NightlyGate | None:
    """The changes of a single run against `previous`; None without one, or for merged runs."""
    if previous is None or len(runs) != 1:
        return None
    return nightly_gate(runs[0], previous)


def earlier_run(run_dir: Path) -> Path | None:
    """The run directory before `run_dir` in the same reports folder: the sibling with a
    results.jsonl whose name sorts last before it (run ids are UTC times); None when none is."""
    run_dir = Path(run_dir).resolve()
    siblings = sorted(d for d in run_dir.parent.iterdir()
                      if d.is_dir() and d.name < run_dir.name and (d / RESULTS_FILE).is_file())
    return siblings[-1] if siblings else None
