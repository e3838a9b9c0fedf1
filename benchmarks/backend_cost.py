"""What the backend check adds to the default sweep: wall time of `auditor sweep` with the
default checks and with `backend` added, on the same model types, alternating (ABAB...), and
the check's own seconds summed over its rows.

    HF_HUB_OFFLINE=1 python benchmarks/backend_cost.py [--models all|a,b] [--repeat 2] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = "build,decorate,pickle"


def sweep(checks: str, models: str, jobs: int) -> dict:
    from auditor.core.results import read_run

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, "-m", "auditor", "sweep", "--checks", checks, "--jobs", str(jobs), "-o", str(out)]
        if models != "all":
            command += ["--models", models]
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        wall = time.perf_counter() - start
        by_check: dict[str, float] = {}
        for row in read_run(out).results:
            by_check[row.check] = by_check.get(row.check, 0.0) + row.seconds
    return {"checks": checks, "wall_s": round(wall, 1), "seconds_by_check": {k: round(v, 1) for k, v in by_check.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    runs = []
    load_before = os.getloadavg()[0]
    for _ in range(args.repeat):
        for checks in (BASE, BASE + ",backend"):
            runs.append(sweep(checks, args.models, args.jobs))
            print(json.dumps(runs[-1]), file=sys.stderr)
    base = [r["wall_s"] for r in runs if r["checks"] == BASE]
    more = [r["wall_s"] for r in runs if r["checks"] != BASE]
    print(json.dumps({"runs": runs, "load_before": load_before, "load_after": os.getloadavg()[0],
                      "base_median_s": sorted(base)[len(base) // 2], "with_backend_median_s": sorted(more)[len(more) // 2],
                      "ratio": round(sum(more) / sum(base), 3)}, indent=1))


if __name__ == "__main__":
    main()
