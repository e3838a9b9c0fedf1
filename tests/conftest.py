"""Shared helpers: run the real CLI in a subprocess, read what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "tests" / "plugins"
TROUBLEMAKERS = str(PLUGINS / "troublemakers.py")


def auditor_env() -> dict[str, str]:
    env = dict(os.environ)
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_auditor(*args: str, cwd: Path | None = None, timeout: float = 600,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`auditor ARGS` in a process of its own; `env`: variables on top of auditor_env()."""
    return subprocess.run(
        [sys.executable, "-m", "auditor", *args],
        cwd=cwd, env={**auditor_env(), **(env or {})}, capture_output=True, text=True, timeout=timeout,
    )


def run_auditors(commands: Sequence[Sequence[str]], cwd: Path | None = None, timeout: float = 900,
                 at_once: int | None = None) -> list[subprocess.CompletedProcess]:
    """Independent CLI runs side by side, each its own real process: their results, in order.

    Much of a short run is one interpreter starting up (importing torch and transformers) on one
    core, and a sweep's first and last model types keep one of its workers idle: runs that do not
    depend on each other overlap those instead of queueing. `at_once` (default: all of them)
    bounds how many run together, for many runs that each only start and refuse."""
    with ThreadPoolExecutor(max_workers=at_once or len(commands) or 1) as pool:
        return list(pool.map(lambda args: run_auditor(*args, cwd=cwd, timeout=timeout), commands))


def read_rows(outdir: Path) -> tuple[dict, list[dict]]:
    """The header and the result rows (completion records left out)."""
    lines = [json.loads(line) for line in (outdir / "results.jsonl").read_text().splitlines()]
    return lines[0], [line for line in lines[1:] if line.get("kind") == "result"]


def by_type(rows: list[dict], check: str = "build") -> dict[str, dict]:
    return {row["model_type"]: row for row in rows if row["check"] == check and not row["component"]}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
