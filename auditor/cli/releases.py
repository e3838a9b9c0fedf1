"""What `bisect` and `versions` share: the index's list of releases, running nox steps, a run's cells.

Not a subcommand. The venvs and the lock are upgrade-check's (auditor/cli/upgrade.py); this only
runs the steps auditor/upgrade/venvs.py plans.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from auditor.cli import UsageError, read_results
from auditor.cli.upgrade import NOXFILE, _stderr_fd, _venv_lock
from auditor.core.hints import NOX_HINT
from auditor.upgrade.plan import Step
from auditor.upgrade.releases import ReleaseError, parse_index_versions

NOX = (sys.executable, "-m", "nox")


@functools.cache
def index_releases() -> tuple[str, ...]:
    """Every final transformers release on the package index pip is configured with, oldest first
    (the one seam to the index: tests replace it)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "transformers"],
                          capture_output=True, text=True, check=False)
    try:
        return tuple(parse_index_versions(proc.stdout))
    except ReleaseError as exc:
        raise UsageError(f"{exc}{(' ' + proc.stderr.strip()[-300:]) if proc.stderr.strip() else ''}") from None


def require_nox(what: str) -> None:
    if importlib.util.find_spec("nox") is None:
        raise UsageError(f"{what} runs nox: {NOX_HINT}")
    if not NOXFILE.is_file():
        raise UsageError(f"{what} needs the project's noxfile, not found at {NOXFILE}: "
                         "run it from a checkout of model-sweep-auditor")


def venv_lock(what: str):
    """One run at a time per checkout installs into the release venvs (upgrade-check's lock)."""
    return _venv_lock(NOXFILE.parent / ".nox" / f"{what}.lock")


def run_step(step: Step, what: str) -> int:
    """Run one nox step, its output on stderr; its exit code."""
    print(f"auditor {what}: {step.describe()}", file=sys.stderr, flush=True)
    return subprocess.run(step.argv, env={**os.environ, **step.env}, stdout=_stderr_fd(), check=False).returncode


def read_cells(outdir: Path, context: str):
    """(model type, column) -> the result that won the cell, of the run in `outdir`; and its run."""
    from auditor.report.matrix import run_cells

    run = read_results(outdir, context)
    return run_cells(run), run
