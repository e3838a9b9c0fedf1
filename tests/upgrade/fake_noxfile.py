"""A stand-in for the project's noxfile in the upgrade-check tests: its two `upgrade_check` sessions
without virtual environments, whose "sweep" copies a prepared results file.

$FAKE_UPGRADE_DIR holds base.jsonl and new.jsonl, and gets log.txt: one line per session run,
`install|sweep SIDE AUDITOR_TRANSFORMERS POSARGS...`. A requirement with 9.9.9 fails to install.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox


@nox.session(python=False)
@nox.parametrize("side", ["base", "new"], ids=["base", "new"])
def upgrade_check(session: nox.Session, side: str) -> None:
    fake = Path(os.environ["FAKE_UPGRADE_DIR"])
    requirement = os.environ["AUDITOR_TRANSFORMERS"]
    action = "sweep" if session.posargs else "install"
    with open(fake / "log.txt", "a", encoding="utf-8") as log:
        log.write(" ".join([action, side, requirement, *session.posargs]) + "\n")
    if "9.9.9" in requirement:
        session.error(f"no release matches {requirement}")
    if session.posargs:
        out = Path(session.posargs[session.posargs.index("--output") + 1])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(fake / f"{side}.jsonl", out / "results.jsonl")
