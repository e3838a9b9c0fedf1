"""Is the engine's attention (auditor/engines/vllm/engine_attention.py) exact on every model type?

    HF_HUB_OFFLINE=1 python scripts/engine_attention_exact.py [--types llama gpt2 ...] [--unmasked]

For each type whose tiny decoder builds (auditor.models.tiny.tiny_model) and runs eagerly (fed as
the compile check feeds it: auditor.models.inputs.decoder_feeds, lengths 7 and 13, no cache), the
outputs with the model's default attention and with the engine's, compared as the compile check
compares eager and compiled outputs (compile_trial.compare, tolerance_for; attention weights aside,
which the engine's attention does not return, as neither sdpa nor vLLM's does). One line a type:

    exact            every output within the tolerance
    differs          by how much, and the tolerance
    errors           the engine's run raised (the message)
    not dispatched   no module of the text side looks its attention up in the registry (nothing changes),
                     or none that the feed reaches does (the op was never called)
    no tiny build / no eager run / cannot feed   the type never reaches the comparison

then the counts. `--unmasked` runs ENGINE_ATTENTION_UNMASKED (no mask function, as vLLM registers none:
transformers skips the masks), to see what skipping them changes. Eager only, one process.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from auditor.checks.compile_trial import compare
from auditor.core.heap import settle
from auditor.engines.vllm.engine_attention import engine_attention
from auditor.models.cases import discover
from auditor.models.inputs import CannotFeed, decoder_feeds
from auditor.models.meta import make_config
from auditor.models.tiny import tiny_model

LENGTHS = (7, 13)
OP = "auditor::attention"


class OpCalls(TorchDispatchMode):
    """Counts the calls of the engine's op while active: a model that switched but never calls it
    (every layer fell back, or the lookup is never reached) dispatches nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._schema.name == OP:
            self.calls += 1
        return func(*args, **(kwargs or {}))


def verdict(model_type: str, masks: bool) -> tuple[str, str]:
    """(kind, detail) for one model type."""
    try:
        model = tiny_model(make_config(model_type)).model
    except Exception as exc:  # noqa: BLE001 - any build failure means the type is not compared
        return "no tiny build", _first_line(exc)
    _without_cache(model.config)
    try:
        ways = decoder_feeds(model, LENGTHS)
    except CannotFeed as exc:
        return "cannot feed", str(exc)
    with torch.no_grad():
        feeds, eager = _eager(model, ways)
        if feeds is None:
            return "no eager run", eager
        with engine_attention(model, masks) as switched:
            if not switched:
                return "not dispatched", ""
            counter = OpCalls()
            try:
                with counter:
                    engine = [model(**feed) for feed in feeds]
            except Exception as exc:  # noqa: BLE001 - the engine's failure is the finding
                return "errors", f"{type(exc).__name__}: {_first_line(exc)}"
    worst, tolerance = 0.0, 0.0
    for expected, actual in zip(eager, engine, strict=True):
        diff, allowed = compare(_without_weights(expected), _without_weights(actual))
        worst, tolerance = max(worst, diff), max(tolerance, allowed)
    detail = f"max abs diff {worst:.3g}, tolerance {tolerance:.3g}, {counter.calls} op calls"
    if worst > tolerance:
        return "differs", detail
    # Switched, but no module the feed reaches calls the op (git: only its vision tower dispatches)
    return ("exact", detail) if counter.calls else ("not dispatched", f"the op was never called; {detail}")


def _eager(model, ways):
    """The first way of feeding that runs with the model's default attention, and its outputs."""
    first = ""
    for feeds in ways:
        try:
            return feeds, [model(**feed) for feed in feeds]
        except Exception as exc:  # noqa: BLE001 - the next way may work
            first = first or f"{type(exc).__name__}: {_first_line(exc)}"
    return None, first


def _without_weights(output):
    """The output without its attention weights: the engine's attention returns none, as sdpa's and vLLM's
    (bridgetower returns the eager weights it got even when not asked for them)."""
    if isinstance(output, dict):
        return {key: value for key, value in output.items() if not key.endswith("attentions")}
    return output


def _without_cache(config) -> None:
    """use_cache=False throughout the config tree, as the compile check runs (compile_trial._without_cache)."""
    for key, value in list(config.__dict__.items()):
        if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            _without_cache(value)
        elif key == "use_cache":
            config.use_cache = False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", nargs="*", default=[], help="model types or glob patterns (default: all)")
    parser.add_argument("--unmasked", action="store_true", help="skip transformers' masks, as vLLM does")
    args = parser.parse_args(argv)
    types = [case.model_type for case in discover()]
    if args.types:
        types = [t for t in types if any(fnmatch.fnmatchcase(t, p) for p in args.types)]
    counts: Counter[str] = Counter()
    for model_type in types:
        kind, detail = verdict(model_type, masks=not args.unmasked)
        counts[kind] += 1
        print(f"{model_type}: {kind}{': ' + detail if detail else ''}", flush=True)
        settle()
    print(f"\n{len(types)} types, masks {'skipped' if args.unmasked else 'built'}: "
          + ", ".join(f"{kind} {count}" for kind, count in counts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
