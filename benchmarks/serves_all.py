"""vLLM's own verdict over every type (issue 40): `auditor sweep --checks build,serves --policies
vllm --jobs 2`, its wall time and peak resident memory (the sweep's process tree, sampled), and
how many types with an architecture vLLM's own code decided (servable or stopped), with the
others grouped by cause. Needs a venv with vLLM.

    VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 python benchmarks/serves_all.py [--models all|a,b] [--jobs 2] [--keep DIR]

Decided: a `serves/vllm` row `build` (servable) or one of vLLM's stops (`unsupported`, or a
failure the fault rule lays on the model or the pairing). Not decided: `undecided` (this
machine's limit, named in the message) and what the machine or the environment did to the cell
(missing-dependency, oom, timeout, crash, auditor-error). Rows skipped for want of an
architecture (transformers maps the type to no model class) are not counted: vLLM is given nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from serves_under_load import sweep

NOT_DECIDED = ("undecided", "missing-dependency", "oom", "timeout", "crash", "auditor-error", "needs-hub")
TARGET = 0.98


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the run here instead of a temporary directory")
    args = parser.parse_args()
    from auditor.core.outcome import judge
    from auditor.core.results import read_run

    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "run"
        options = ["--checks", "build,serves", "--policies", "vllm", "--jobs", str(args.jobs)]
        options += [] if args.models == "all" else ["--models", args.models]
        figures = sweep(options, out)
        figures.pop("cells")
        claims: dict[tuple, list] = defaultdict(list)
        for r in read_run(out).results:
            if r.check == "serves":
                claims[(r.model_type, r.component, r.policy)].append(r)
        # the one cell rule decides each cell (the first row; an oom's rerun alone: core/outcome.judge)
        rows = [judge(cell).row for cell in claims.values()]
    counted = [r for r in rows if not (r.status.value == "skipped" and "no architecture" in r.message)]
    by_status: dict[str, int] = defaultdict(int)
    causes: dict[str, list[str]] = defaultdict(list)
    for r in counted:
        by_status[r.status.value] += 1
        if r.status.value in NOT_DECIDED:
            causes[f"{r.status.value}: {(r.signature or r.message)[:160]}"].append(r.model_type)
    not_decided = sum(by_status[s] for s in NOT_DECIDED)
    decided = len(counted) - not_decided
    print(json.dumps({
        "command": "auditor sweep " + " ".join(options), **figures,
        "types": len({r.model_type for r in rows}), "with_architecture": len(counted),
        "serves_by_status": dict(sorted(by_status.items())), "undecided": by_status["undecided"],
        "not_decided": not_decided, "decided": decided,
        "decided_share": round(decided / max(len(counted), 1), 4), "target_share": TARGET,
        "not_decided_by_cause": {cause: sorted(types) for cause, types in
                                 sorted(causes.items(), key=lambda item: -len(item[1]))},
    }, indent=1))
    sys.exit(0 if decided / max(len(counted), 1) >= TARGET else 1)


if __name__ == "__main__":
    main()
