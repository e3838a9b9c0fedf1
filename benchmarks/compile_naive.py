"""The naive reference of the compile sweep: what one would write without the auditor.

One process, every model type in turn: the same tiny model the auditor builds, run eagerly at
7, 13 and 29 tokens, then `torch.compile(model, fullgraph=True, dynamic=False, backend=...)`
without guards (vLLM's settings), the token dim marked dynamic, at the same lengths; no workers, no isolation, no decorator, no
gates, no comparison with eager beyond running, no rows written. A type that raises is counted
and the loop goes on; one that hangs past --timeout is stopped by an alarm.

Run: python benchmarks/compile_naive.py [--backend aot_eager] [--models all|a,b,c] [--timeout 300]
Prints one JSON line: wall seconds, types tried, compiled, failed, timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time

LENGTHS = (7, 13, 29)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def one(model_type: str, backend: str) -> None:
    import torch

    from auditor.models.inputs import decoder_feeds
    from auditor.models.meta import make_config
    from auditor.models.tiny import tiny_model

    model = tiny_model(make_config(model_type), "cpu").model
    feeds = decoder_feeds(model, LENGTHS, positions=True)[0]
    with torch.no_grad():
        for feed in feeds:
            model(**feed)
        for name in ("input_ids", "decoder_input_ids", "position_ids"):  # the length, as vLLM marks it
            if isinstance(feeds[0].get(name), torch.Tensor):
                torch._dynamo.mark_dynamic(feeds[0][name], feeds[0][name].ndim - 1)
        compiled = torch.compile(model, fullgraph=True, dynamic=False, backend=backend,
                                 options={"guard_filter_fn": torch.compiler.skip_all_guards_unsafe})
        for feed in feeds:
            compiled(**feed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--models", default="all")
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    types = sorted(MODEL_MAPPING_NAMES) if args.models == "all" else args.models.split(",")
    counts = {"compiled": 0, "failed": 0, "timed_out": 0}
    signal.signal(signal.SIGALRM, _alarm)
    start = time.perf_counter()
    for model_type in types:
        signal.alarm(args.timeout)
        try:
            one(model_type, args.backend)
            counts["compiled"] += 1
        except _Timeout:
            counts["timed_out"] += 1
        except Exception:  # the naive loop's only isolation
            counts["failed"] += 1
        finally:
            signal.alarm(0)
            torch._dynamo.reset()
    print(json.dumps({"wall_s": round(time.perf_counter() - start, 1), "types": len(types), **counts}))


if __name__ == "__main__":
    main()
