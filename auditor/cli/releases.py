"""What the CLIs of `upgrade-check`, `bisect` and `versions` share: their progress, printed.

Not a subcommand. The runners are auditor/upgrade/ (check.py, bisect_run.py, versions.py); they
report to a `SideEvents`, and this one prints it on stderr, so that stdout holds only the
verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

import auditor.engines as engines
from auditor.cli import note_damage
from auditor.core.results import Run
from auditor.environments.runner import SideEvents, describe_install
from auditor.environments.steps import Step

_EXAMPLE = engines.example_requirement()


def add_engine_argument(group, force: bool = False) -> None:
    """--engine, the same on upgrade-check, versions, bisect and bisect-step; `force`: with
    --force-transformers (upgrade-check, bisect and bisect-step, whose sides take it)."""
    group.add_argument("--engine", dest="engines", action="append", default=[], metavar="NAME==VERSION",
                       help=f"a serving engine to install into every side, e.g. {_EXAMPLE} (repeatable; "
                            f"`{_EXAMPLE.split('==')[0]}` alone: the version installed here); its sweeps then also "
                            "run the engine's "
                            "own functions, and a transformers the engine excludes is refused before any install"
                            + (" (unless --force-transformers)" if force else ""))
    if force:
        group.add_argument("--force-transformers", action="store_true",
                           help="install each side's transformers after the engine even where the engine's own "
                                "requirement excludes it (as an engine's own nightly job against transformers does); "
                                "each side's rows name the forced pairing")


def add_fail_on_drift_argument(group) -> None:
    """--fail-on-drift, the same on diff and upgrade-check (sweep's and report's --fail-on gate on
    cells; this one on config drift)."""
    group.add_argument("--fail-on-drift", action="store_true",
                       help="also exit 1 when a default config drifted (keys renamed, removed, added or "
                            "re-defaulted, attribute maps, plans, model class, parameters)")


def add_fail_on_engine_argument(group) -> None:
    """--fail-on-engine, the same on diff, gate and upgrade-check: exit 1 only when one of these
    engines (names from the engine registry) no longer serves a type it served."""
    from auditor import engines

    group.add_argument("--fail-on-engine", dest="fail_on_engines", action="append", default=[],
                       choices=engines.names(), metavar="NAME",
                       help="exit 1 only when this serving engine lost a type (served before, stopped now), "
                            "whatever other engines and cells did; repeatable, one of: " + ", ".join(engines.names()))


def print_dry_run(steps) -> None:
    """What each step installs (a comment) and its command line, for --dry-run."""
    for step in steps:
        if step.action == "install":
            print(f"# {step.side.name}: installs {describe_install(step.env)}")
        print(step.shell())


class PrintedEvents(SideEvents):
    """Each event on stderr, as `auditor WHAT: ...`."""

    def __init__(self, what: str) -> None:
        self.what = what

    def step(self, step: Step) -> None:
        print(f"auditor {self.what}: {step.describe()}", file=sys.stderr, flush=True)

    def waiting(self, lock: Path) -> None:
        print(f"auditor upgrade-check: waiting for another auditor command that installs into this checkout's venvs ({lock})",
              file=sys.stderr, flush=True)

    def damaged(self, run: Run) -> None:
        note_damage(run)

    def note(self, text: str) -> None:
        print(f"auditor {self.what}: {text}", file=sys.stderr)

    def output(self, text: str) -> None:
        sys.stderr.write(text)
