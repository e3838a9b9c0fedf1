"""What the CLIs of `upgrade-check`, `bisect` and `versions` share: their progress, printed.

Not a subcommand. The runners are auditor/upgrade/ (check.py, bisecting.py, versions.py); they
report to an `UpgradeEvents`, and this one prints it on stderr, so that stdout holds only the
verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

from auditor.cli import note_damage
from auditor.core.results import Run
from auditor.upgrade.plan import Step
from auditor.upgrade.runner import UpgradeEvents


class PrintedEvents(UpgradeEvents):
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
