"""The backend check's cost per model type, and whether its shortcut changes any row.

In one process, for each model type: the plain meta build (what CaseContext makes for every
check), then the backend check's emulated rows as the sweep computes them (the plain build
standing in for vLLM's where auditor.engines.vllm.build.needs_own_build allows it), then, with
--validate, the same rows with vLLM's build made for every type. Prints the time of each
part and every row the shortcut changes.

    HF_HUB_OFFLINE=1 python benchmarks/backend_shortcut.py --validate [--models llama,gpt2]
"""

from __future__ import annotations

import argparse
import time
import warnings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="")
    parser.add_argument("--validate", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import transformers

    transformers.logging.set_verbosity_error()
    from auditor.checks import get
    from auditor.checks.interface import CaseContext, Options
    from auditor.engines.vllm import build as vllm_build
    from auditor.models.cases import discover, select
    from auditor.sweeping.options import DEFAULT_POLICIES

    cases = select(discover(), [m for m in args.models.split(",") if m])
    check = get("backend")
    plain_s = backend_s = full_s = 0.0
    own = differ = 0
    for case in cases:
        context = CaseContext(case, Options(policies=DEFAULT_POLICIES, checks=("build", "backend")))
        start = time.perf_counter()
        context.plain_failure()
        plain_s += time.perf_counter() - start
        start = time.perf_counter()
        rows = list(check.run(case, context))
        backend_s += time.perf_counter() - start
        own += any(r.component == "build" and r.extras.get("own_build") for r in rows)
        if args.validate:
            saved = vllm_build.needs_own_build
            vllm_build.needs_own_build = lambda *a: True
            try:
                start = time.perf_counter()
                full = list(check.run(case, CaseContext(case, context.options)))
                full_s += time.perf_counter() - start
            finally:
                vllm_build.needs_own_build = saved
            for a, b in zip(rows, full, strict=True):
                if (a.component, a.status, a.message) != (b.component, b.status, b.message):
                    differ += 1
                    print(f"DIFFER {case.model_type} {a.component}: {a.status.value} {a.message[:120]!r} "
                          f"vs {b.status.value} {b.message[:120]!r}")
    n = len(cases)
    print(f"{n} types: plain builds {plain_s:.1f} s, backend check {backend_s:.1f} s "
          f"({100 * backend_s / plain_s:.1f}% of the plain builds), vLLM's build made for {own}")
    if args.validate:
        print(f"with vLLM's build made for every type: {full_s:.1f} s; rows that differ: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
