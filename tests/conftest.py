"""Shared helpers: run the real CLI in a subprocess, read what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def run_auditor(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "auditor", *args],
        cwd=cwd, env=auditor_env(), capture_output=True, text=True, timeout=timeout,
    )


def read_rows(outdir: Path) -> tuple[dict, list[dict]]:
    """The header and the result rows (completion records left out)."""
    lines = [json.loads(line) for line in (outdir / "results.jsonl").read_text().splitlines()]
    return lines[0], [line for line in lines[1:] if line.get("kind") == "result"]


def by_type(rows: list[dict], check: str = "build") -> dict[str, dict]:
    return {row["model_type"]: row for row in rows if row["check"] == check and not row["component"]}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
