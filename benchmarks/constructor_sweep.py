"""vLLM's own constructor over every type: wall time of `auditor sweep --checks backend,serves
--policies vllm --jobs 2` (the Transformers backend's own constructor in the backend check's
`vllm` rows, and `get_model(model_impl="auto")`, native or backend, in the serves rows), and where
the time goes, from the rows' own seconds. Needs a venv with vLLM (VLLM_TARGET_DEVICE=cpu here).

    VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 python benchmarks/constructor_sweep.py [--models all|a,b] [--jobs 2]

`--cold` empties vLLM's model-info cache (~/.cache/vllm/modelinfos) first: the registry then
inspects each model class it is asked about once per worker, as on a fresh machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 15 * 60  # issue 32: every type, --jobs 2, within 15 minutes here


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the run here instead of a temporary directory")
    args = parser.parse_args()
    from auditor.core.results import read_run

    if args.cold:
        shutil.rmtree(Path.home() / ".cache" / "vllm" / "modelinfos", ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "run"
        command = [sys.executable, "-m", "auditor", "sweep", "--checks", "backend,serves", "--policies", "vllm",
                   "--jobs", str(args.jobs), "--overwrite", "-o", str(out)]
        command += [] if args.models == "all" else ["--models", args.models]
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            sys.exit(f"the sweep exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        run = read_run(out)
    rows = run.results
    serves = [r for r in rows if r.check == "serves"]
    own = [r for r in rows if r.check == "backend" and r.policy == "vllm"]
    emulated = [r for r in rows if r.check == "backend" and not r.policy]
    by = {}
    for r in serves:
        key = r.extras.get("impl") if r.status.ok else f"stopped ({r.extras.get('stage') or r.status.value})"
        by.setdefault(key or "no architecture", []).append(r.seconds)
    busy = sum(r.seconds for r in rows)
    print(json.dumps({
        "command": " ".join(command[1:]), "exit": proc.returncode, "wall_s": round(wall, 1),
        "target_s": TARGET_S, "within_target": wall <= TARGET_S, "model_types": len({r.model_type for r in rows}),
        "jobs": args.jobs, "cold_model_info_cache": args.cold,
        "load_before": load_before, "load_after": os.getloadavg()[0],
        "max_rss_child_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "engine": run.info.engine_versions,
        "serves_s": {k: {"types": len(v), "sum_s": round(sum(v), 1), "median_s": round(statistics.median(v), 2)}
                     for k, v in sorted(by.items())},
        "backend_own_sum_s": round(sum(r.seconds for r in own), 1),
        "backend_emulated_sum_s": round(sum(r.seconds for r in emulated), 1),
        "rows_sum_s": round(busy, 1),
        # what the rows do not account for, over the workers' time: start-up (torch, transformers,
        # vLLM imported per worker), each type's config and meta build, the parent's writing
        "outside_rows_s": round(wall * args.jobs - busy, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
