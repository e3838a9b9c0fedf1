"""The baseline: one process, one loop, each model type built once on the meta device.

This is what a person would write without the auditor. `sweep_vs_naive.py` runs it.
"""

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(models: list[str]) -> None:
    from auditor.models.meta import build_on_meta, make_config

    start = time.perf_counter()
    built = failed = 0
    for model_type in models:
        try:
            build_on_meta(make_config(model_type))
            built += 1
        except Exception:
            failed += 1
    print(f"naive: {built} built, {failed} failed in {time.perf_counter() - start:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1].split(","))
