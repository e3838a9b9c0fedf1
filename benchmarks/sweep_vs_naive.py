"""Wall time and peak memory of `auditor sweep` against the naive single-process loop.

Run: python benchmarks/sweep_vs_naive.py [--models all|a,b,c] [--jobs 2] [--checks build]
        [--baseline-checks build,decorate]
Both run in the same invocation, on the same model types, one after the other; peak
memory is the largest sum of resident memory over the whole process tree, sampled
every 200 ms. Prints one JSON document with the ratio. `--baseline-checks` also times a
sweep with fewer checks, so the cost of the others shows in the same run; `seconds_by_check`
adds up each check's row timings inside the workers; `load` is the machine's load average
before and after (the cores may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
# Peak memory sampling interval. Each sample walks /proc; at 50 ms that took ~5% of a core
# from a sweep that keeps both cores busy, so 200 ms (the peak is the workers' steady state).
SAMPLE_SECONDS = 0.2


def measure(command: list[str], results: Path | None = None) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # never let the pipe fill
    reader.start()
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss(root))
        time.sleep(SAMPLE_SECONDS)
    wall = time.perf_counter() - start
    reader.join()
    stderr = "".join(lines)
    if proc.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({proc.returncode}):\n{stderr[-2000:]}")
    found = {"wall_s": round(wall, 2), "peak_rss_mb": round(peak / 2**20), "tail": stderr.strip().splitlines()[-1]}
    if results is not None:
        found["seconds_by_check"] = seconds_by_check(results)
    return found


def seconds_by_check(results: Path) -> dict[str, float]:
    """Each check's row timings added up (worker time, all workers together)."""
    totals: dict[str, float] = {}
    for line in results.read_text().splitlines()[1:]:
        row = json.loads(line)
        if row.get("kind") != "result":  # the completion records of results format 2
            continue
        totals[row["check"]] = totals.get(row["check"], 0.0) + row.get("seconds", 0.0)
    return {check: round(seconds, 1) for check, seconds in totals.items()}


def sweep(models: str, jobs: int, checks: str, policies: str, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        out = keep or Path(scratch)
        return measure([sys.executable, "-m", "auditor", "sweep", "--models", models, "--jobs", str(jobs),
                        "--checks", checks, "--policies", policies, "-o", str(out), "--overwrite"],
                       out / "results.jsonl")


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    try:
        for process in [root, *root.children(recursive=True)]:
            try:
                total += process.memory_info().rss
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


def all_model_types() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c",
         "from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES as m;print(','.join(sorted(m)))"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip().split(",")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--checks", default="build")
    parser.add_argument("--policies", default="legacy,fixed,fixed-no-config-skip")
    parser.add_argument("--baseline-checks", default="",
                        help="also time a sweep with these checks (e.g. build,decorate)")
    parser.add_argument("--keep", type=Path, help="write the (main) sweep's run here instead of a temporary directory")
    args = parser.parse_args()
    models = all_model_types() if args.models == "all" else args.models.split(",")
    joined = ",".join(models)
    load_before = os.getloadavg()
    naive = measure([sys.executable, str(ROOT / "benchmarks" / "naive_loop.py"), joined])
    swept = sweep(joined, args.jobs, args.checks, args.policies, args.keep)
    baseline = sweep(joined, args.jobs, args.baseline_checks, args.policies) if args.baseline_checks else None
    import torch
    import transformers

    print(json.dumps({
        "model_types": len(models),
        "checks": args.checks,
        "jobs": args.jobs,
        "naive": naive,
        "sweep": swept,
        "ratio_wall_sweep_over_naive": round(swept["wall_s"] / naive["wall_s"], 3),
        **({"baseline": {"checks": args.baseline_checks, **baseline},
            "ratio_wall_baseline_over_naive": round(baseline["wall_s"] / naive["wall_s"], 3)} if baseline else {}),
        "load": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "machine": f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, {platform.platform()}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }, indent=2))


if __name__ == "__main__":
    main()
