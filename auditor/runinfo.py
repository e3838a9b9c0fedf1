"""Probing the environment of a run (versions, platform, git revision) into a RunInfo."""

from __future__ import annotations

import datetime
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from auditor.results import RunInfo


def version_of(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def git_revision() -> str:
    """The auditor's own git revision, when it runs from a checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def probe(command: str, device: str, checks: tuple[str, ...], label: str = "") -> RunInfo:
    from auditor import __version__

    return RunInfo(
        python=platform.python_version(),
        torch=version_of("torch"),
        transformers=version_of("transformers"),
        accelerate=version_of("accelerate"),
        cloudpickle=version_of("cloudpickle"),
        platform=f"{platform.system()}-{platform.machine()} {platform.release()}",
        device=device,
        auditor=__version__,
        git_revision=git_revision(),
        command=command,
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        hostname=socket.gethostname(),
        checks=checks,
        label=label,
    )


