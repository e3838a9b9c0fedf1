"""vLLM's own verdict does not depend on the machine's load (issue 40): the same sweep of common
types alone, then with CPU-bound processes running beside it, in one run; the verdicts compared
cell by cell, the timeout rows and wall times reported. Needs a venv with vLLM.

    VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 python benchmarks/serves_under_load.py [--burners 2] [--jobs 2]

The burners are real processes (`python -c 'while True: pass'`), started before the loaded
sweep and killed after it. A cell's verdict is its deciding row's (the first; reruns are kept
and listed): status, and its message where it passed or its signature where it did not. Prints
one JSON document; exit 1 where a verdict differs or a row timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

# The common types of issue 40: six dense decoders, the twelve MoE and vision-language types of
# its table, and the two whose registry inspection failed on a loaded machine (qwen3_next, qwen3_5).
TYPES = ("llama", "qwen2", "qwen3", "mistral", "gemma3_text", "phi3",
         "qwen3_moe", "mixtral", "olmoe", "deepseek_v3", "gpt_oss",
         "qwen2_vl", "llava", "mllama", "gemma3", "idefics3", "paligemma", "qwen2_5_vl",
         "qwen3_next", "qwen3_5")
BURN = "while True: pass"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(TYPES))
    parser.add_argument("--checks", default="build,serves")
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep both runs here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        command = ["--models", args.models, "--checks", args.checks, "--policies", "vllm", "--jobs", str(args.jobs)]
        alone = sweep(command, base / "alone")
        burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
        try:
            loaded = sweep(command, base / "loaded")
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()
    differ = compare(alone.pop("cells"), loaded.pop("cells"))
    report = {"command": "auditor sweep " + " ".join(command), "burners": args.burners,
              "cores": os.cpu_count(), "alone": alone, "loaded": loaded,
              "cells": alone["cell_count"], "same_verdicts": not differ, "differ": differ}
    print(json.dumps(report, indent=1))
    sys.exit(1 if differ or alone["timeouts"] or loaded["timeouts"] else 0)


def sweep(options: list[str], out: Path) -> dict:
    """`auditor sweep OPTIONS -o OUT`: its wall time, the peak resident memory of its process
    tree (sampled every 0.5 s), the load, its cells' verdicts and its timeout rows."""
    from auditor.core.results import read_run

    command = [sys.executable, "-m", "auditor", "sweep", *options, "--overwrite", "-o", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")}
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    peak = PeakMemory(proc.pid)
    peak.start()
    _, stderr = proc.communicate()
    wall = time.perf_counter() - start
    peak.stop()
    if proc.returncode not in (0, 1):
        sys.exit(f"the sweep exited {proc.returncode}:\n{stderr[-3000:]}")
    rows = read_run(out).results
    verdicts = cells(rows)
    serves = [r.seconds for r in rows if r.check == "serves"]
    return {"wall_s": round(wall, 1), "exit": proc.returncode, "peak_rss_mb": round(peak.peak / 2**20),
            "load_average_1min_after": round(os.getloadavg()[0], 2),
            "rows": len(rows), "cell_count": len(verdicts),
            "timeouts": [f"{r.model_type} {r.column}: {r.message}" for r in rows if r.status.value == "timeout"],
            "reruns": [f"{r.model_type} {r.column}: {r.status.value}" for r in rows if r.extras.get("rerun")],
            "serves_seconds": {"sum": round(sum(serves), 1), "max": round(max(serves, default=0), 1)},
            "cells": verdicts}


def cells(rows) -> dict[str, str]:
    """Cell ("type column") -> its verdict: the deciding (first) row's status and its message where
    it passed, its signature where it did not."""
    found: dict[str, str] = {}
    for r in rows:
        key = f"{r.model_type} {r.column}"
        if key not in found and not r.extras.get("rerun"):
            found[key] = f"{r.status.value}: {r.message if r.status.ok else r.signature}"
    return found


def compare(alone: dict[str, str], loaded: dict[str, str]) -> list[dict]:
    """The cells whose verdicts differ, and those on one side only."""
    return [{"cell": key, "alone": alone.get(key, "(no cell)"), "loaded": loaded.get(key, "(no cell)")}
            for key in sorted(set(alone) | set(loaded)) if alone.get(key) != loaded.get(key)]


class PeakMemory(threading.Thread):
    """The largest resident memory of a process and its descendants, summed, sampled every 0.5 s
    (a floor: a peak between two samples is missed)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._done = pid, 0, threading.Event()

    def run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self._done.wait(0.5):
            total = 0
            try:
                family = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            for process in family:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def stop(self) -> None:
        self._done.set()
        self.join()


if __name__ == "__main__":
    main()
