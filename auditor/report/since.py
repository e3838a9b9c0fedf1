"""Since the last run: what changed in a run against the previous run of the same selection.

The nightly gate's reading (auditor.report.nightly) without a baseline, at the level users decide
on (auditor.report.changes): per engine, the types that lost or gained its verdict, new and
removed types; then the cells. Reports show it right after the verdicts (a report answers what
changed before it lists), when they are given an earlier run.

Which run is the last one is a rule of this module too (`same_selection`): a reports folder may
hold the nightly runs of several Pythons, labels or shards side by side, and one-off runs of other
model types; a run compared with another selection would list every type it did not select as
removed. Releases are what a nightly exists to follow: a run under transformers 5.25.0 compares
with the night before under 5.24.0, and the section opens with that
(auditor.report.changes.environment_changes).
Pure: runs in, Changes out (report/files.py reads the reports folder).
"""

from __future__ import annotations

from collections.abc import Sequence

from auditor.core.results import Run, RunInfo
from auditor.report.changes import Changes, changes

SHOWN = 10  # cells listed per kind of change; the diff (`auditor diff`) has them all


def since(runs: Sequence[Run], previous: Run | None) -> Changes | None:
    """The changes of `runs` against `previous`; None without one. Merged runs (an --engine
    sweep's: this environment's run, then each engine venv's) compare their first run, the one
    the previous sweep's first run was; where `previous` is one of the runs (upgrade-check's side
    by side report: base, then new), the run after it is compared with it."""
    if previous is None or not runs:
        return None
    at = next((i for i, run in enumerate(runs) if run is previous), None)
    if at is not None:
        return changes(previous, runs[at + 1]) if at + 1 < len(runs) else None
    return changes(previous, runs[0])


def same_selection(info: RunInfo, other: RunInfo) -> bool:
    """Whether a run of `other`'s header is one a run of `info`'s may be compared with: the same
    model types asked for (--models, --exclude, --remote-code as given), checks, policies, label,
    shard (a shard of a split sweep holds other model types than the next shard's) and Python
    minor, whatever transformers, torch or engine releases each ran under."""
    return not differences(info, other)


def differences(info: RunInfo, other: RunInfo) -> list[str]:
    """What makes `other` another selection than `info` ("label nightly, not ''"); [] when none."""
    ours, theirs = _selection(info), _selection(other)
    return [f"{what} {_shown(theirs[what])}, not {_shown(ours[what])}" for what in ours if ours[what] != theirs[what]]


def _selection(info: RunInfo) -> dict[str, object]:
    return {"model types": "not recorded" if info.selection is None else _spelled(info.selection) or "all",
            "checks": ",".join(sorted(info.checks)), "policies": _policies(info), "label": info.label,
            "shard": info.shard, "Python": info.python_minor}


def _spelled(words) -> str:
    """A selection's words (`--models a --models b --exclude c`) as one flag each with its values
    joined (`--models a,b --exclude c`)."""
    values: dict[str, list[str]] = {}
    flag = ""
    for word in words:
        if word.startswith("--"):
            flag = word
            values.setdefault(flag, [])
        else:
            values.setdefault(flag, []).append(word)
    return " ".join(" ".join(p for p in (flag, ",".join(items)) if p) for flag, items in values.items())


def _policies(info: RunInfo) -> str:
    value = info.experiment.get("policies")
    return ",".join(value) if isinstance(value, list | tuple) else str(value or "")


def _shown(value, width: int = 120) -> str:
    text = repr(value) if value == "" else str(value)
    return text if len(text) <= width else text[:width - 3] + "..."
