"""nox sessions: the sweep per Python version, tests and lint.

Interpreters installed with pyenv are found even when pyenv has not put them on PATH.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
TORCH = os.environ.get("AUDITOR_TORCH", "2.13.0")
ROOT = Path(__file__).parent

nox.options.sessions = ["tests", "lint"]
nox.options.error_on_missing_interpreters = False


def _pyenv_paths() -> list[str]:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    return sorted(str(p / "bin") for p in root.glob("3.*") if (p / "bin").is_dir())


# Make pyenv's interpreters visible to nox's interpreter lookup.
os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), *_pyenv_paths()])


def _install(session: nox.Session, extras: str = "") -> None:
    session.install(f"torch=={TORCH}")
    session.install("-e", f".{extras}")


@nox.session(python=PYTHONS)
def sweep(session: nox.Session) -> None:
    """The sweep on this Python version: reports/<run-id>/py3.X/."""
    _install(session)
    run_id = os.environ.get("AUDITOR_RUN_ID", "nox")
    out = ROOT / "reports" / run_id / f"py{session.python}"
    session.run("auditor", "sweep", "-o", str(out), "--overwrite", *session.posargs)


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    _install(session, "[test]")
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "auditor", "tests", "benchmarks", "noxfile.py")


