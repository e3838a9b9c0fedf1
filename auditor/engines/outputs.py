"""Served outputs: what an engine returns when it runs a type's tiny checkpoint for real, held to
transformers' own forward of the same checkpoint (the `outputs` check's rows, auditor/checks/outputs.py;
the engine's run itself is its `Engine.runs`: vllm/running.py).

Both sides are in the one record of this module: `Outputs`, the log-probabilities at every prompt
position (position p: of the token after p tokens, over the ids the engine returned there) and a
few greedy tokens with each step's top log-probabilities. transformers' side is the model's own
logits (after its softcapping and scaling) through log_softmax; the engine's are what it returns.

`compare` judges them as vLLM's own tests do, and stricter: every logprob the engine returned
within the dtype's tolerance (named on the row), the top token equal at every prompt position,
and the greedy tokens under vLLM's rule (tests/models/utils.py `check_logprobs_close`): where the
two sequences first diverge, each side's token is among the other's top log-probabilities, and
nothing after that is compared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status

# The largest difference of a logprob that still counts as the same, per dtype the run used.
# float32: both sides compute the same float32 ops in another order (28 of 35 types measured within
# 1.5e-5 on this CPU); the reduced precisions as vLLM's tests allow them, which fall back on the
# greedy rule rather than the numbers.
TOLERANCE = {"float32": 1e-3, "float16": 5e-2, "bfloat16": 1e-1}
PROMPT_LENGTH = 48  # past every tiny sliding window (the tiny configs' windows are cut to 8)
GREEDY_TOKENS = 4
TOP = 5  # the top log-probabilities kept at each greedy step (vLLM's rule reads them)


@dataclass(frozen=True)
class Outputs:
    """One side's outputs on a prompt. `prompt[p]` ({token id: logprob}) is the distribution after
    the first p+1 prompt tokens (the engine's prompt_logprobs at position p+1); `greedy` the
    greedy continuation, `greedy_top[i]` the top log-probabilities at its step i."""

    prompt: tuple[Mapping[int, float], ...]
    greedy: tuple[int, ...]
    greedy_top: tuple[Mapping[int, float], ...]
    extras: Mapping[str, object] = field(default_factory=dict)  # what the side says of itself (the class it ran)
    # A pooling model's output instead: its hidden states pooled (the engine's: as it pools them,
    # `extras["pooling"]`; transformers' side keeps every position's, pooled the same way: `pooled`)
    embedding: tuple[float, ...] = ()
    hidden: tuple[tuple[float, ...], ...] = ()


@dataclass(frozen=True)
class Comparison:
    max_diff: float
    at: int  # the prompt position of the largest difference
    top1: int  # positions where the top token is the same
    positions: int
    greedy: str  # "" where the greedy tokens agree by vLLM's rule, else where and how they diverge
    compared: int  # logprobs compared

    def same(self, tolerance: float) -> bool:
        return self.max_diff <= tolerance and self.top1 == self.positions and not self.greedy


def _top(row: Mapping[int, float]) -> int:
    return max(row, key=row.__getitem__)


def compare(reference: Outputs, engine: Outputs) -> Comparison:
    """`engine` against `reference` position by position (see the module's docstring)."""
    worst, at, top1, compared = 0.0, 0, 0, 0
    for position, (want, got) in enumerate(zip(reference.prompt, engine.prompt, strict=True)):
        for token, value in got.items():
            diff = abs(value - want[token]) if math.isfinite(value) and math.isfinite(want[token]) else (
                0.0 if value == want[token] else math.inf)
            compared += 1
            if diff > worst:
                worst, at = diff, position + 1
        top1 += _top(got) == _top(want)
    return Comparison(worst, at, top1, len(reference.prompt), _greedy(reference, engine), compared)


def _greedy(reference: Outputs, engine: Outputs) -> str:
    """vLLM's check_logprobs_close on the greedy tokens: "" where they agree or diverge acceptably."""
    for step, (want, got) in enumerate(zip(reference.greedy, engine.greedy, strict=False)):
        if want == got:
            continue
        if got not in reference.greedy_top[step] or want not in engine.greedy_top[step]:
            return (f"greedy step {step}: the engine's token {got} and transformers' {want} are not each among the "
                    f"other's top {TOP}")
        return ""
    if len(engine.greedy) != len(reference.greedy):
        return f"greedy: {len(engine.greedy)} tokens, transformers {len(reference.greedy)}"
    return ""


def verdict(reference: Outputs, engine: Outputs, dtype: str, title: str, extras: dict, fault: Fault = Fault.ENGINE):
    """The row's outcome: `same`, or `different-outputs` with its numbers, whose fault is `fault`:
    the engine's where it ran transformers' own modeling code (its Transformers backend: what
    differs is its integration); the pairing's where it ran a class of its own, since either
    side may be the one that is wrong (mamba2: vLLM 0.32.0's native class differs from
    transformers 5.19.0's and agrees with 5.25.0's)."""
    tolerance = TOLERANCE[dtype]
    found = compare(reference, engine)
    numbers = {"max_logprob_diff": found.max_diff, "at_position": found.at, "top1_equal": found.top1,
               "positions": found.positions, "tolerance": tolerance, "dtype": dtype,
               "logprobs_compared": found.compared, "greedy": list(engine.greedy),
               "greedy_transformers": list(reference.greedy)}
    summary = (f"max logprob difference {found.max_diff:.2g} at prompt position {found.at} (tolerance {tolerance:g}, "
               f"{dtype}); top token equal at {found.top1}/{found.positions} positions")
    extras = {**extras, **numbers}
    if found.same(tolerance):
        return Status.SAME, f"{title} gives transformers' outputs: {summary}", extras
    if found.greedy:
        summary += f"; {found.greedy}"
    message = f"{title} differs from transformers: {summary}"
    return Failure(Status.DIFFERENT_OUTPUTS, message, signature_of(f"{title} differs from transformers"),
                   fault, extras)


def embedding_verdict(reference: Outputs, engine: Outputs, dtype: str, title: str, extras: dict,
                      fault: Fault = Fault.ENGINE):
    """A pooling model's row: the engine's embedding against transformers' hidden states pooled the
    way the engine pooled them (its `pooling`), element by element."""
    tolerance = TOLERANCE[dtype]
    pooling = str(engine.extras.get("pooling", ""))
    want = pooled(reference.hidden, pooling)
    if len(want) != len(engine.embedding):
        diff, at = math.inf, -1
    else:
        diff, at = max(((abs(a - b) if math.isfinite(a) and math.isfinite(b) else math.inf, i)
                        for i, (a, b) in enumerate(zip(want, engine.embedding, strict=True))), default=(0.0, 0))
    extras = {**extras, "max_embedding_diff": diff, "at_dimension": at, "tolerance": tolerance, "dtype": dtype,
              "pooling": pooling, "dimensions": len(engine.embedding)}
    summary = (f"embedding ({pooling} pooling, {len(engine.embedding)} dimensions) max difference {diff:.2g} at "
               f"dimension {at} (tolerance {tolerance:g}, {dtype})")
    if diff <= tolerance:
        return Status.SAME, f"{title} gives transformers' outputs: {summary}", extras
    return Failure(Status.DIFFERENT_OUTPUTS, f"{title} differs from transformers: {summary}",
                   signature_of(f"{title} differs from transformers"), fault, extras)


def pooled(hidden: Sequence[Sequence[float]], pooling: str) -> tuple[float, ...]:
    """Hidden states [positions][width] pooled as vLLM's sequence pooling types say: the last
    position, the first (CLS), or the mean."""
    if not hidden:
        return ()
    if pooling == "CLS":
        return tuple(hidden[0])
    if pooling == "MEAN":
        return tuple(sum(column) / len(hidden) for column in zip(*hidden, strict=True))
    return tuple(hidden[-1])  # LAST, vLLM's default for a decoder


def reference_hidden(model, prompt: Sequence[int]) -> Outputs:
    """transformers' side of a pooling model: its last hidden states on `prompt`, every position."""
    import torch

    with torch.no_grad():
        output = model(input_ids=torch.tensor([list(prompt)]))
    hidden = getattr(output, "last_hidden_state", None)
    if hidden is None:
        hidden = output[0]
    return Outputs((), (), (), {"class": type(model).__name__},
                   hidden=tuple(tuple(row) for row in hidden[0].float().tolist()))


def reference_outputs(model, prompt: Sequence[int], greedy: int = GREEDY_TOKENS) -> Outputs:
    """transformers' side: `model`'s own logits on `prompt` (no cache, one forward per greedy step,
    so each step is the model's plain forward), through log_softmax in float32."""
    import torch

    ids = list(prompt)
    with torch.no_grad():
        logprobs = _logprobs(model, ids)
        rows = tuple(_row(logprobs[p]) for p in range(len(ids) - 1))
        tokens, tops = [], []
        last = logprobs[-1]
        for _ in range(greedy):
            token = int(last.argmax())
            tokens.append(token)
            tops.append(_row(last, TOP))
            ids.append(token)
            last = _logprobs(model, ids)[-1]
    return Outputs(rows, tuple(tokens), tuple(tops), {"class": type(model).__name__})


def _logprobs(model, ids: list[int]):
    import torch

    output = model(input_ids=torch.tensor([ids]), use_cache=False)
    return torch.log_softmax(output.logits[0].float(), dim=-1)


def _row(logprobs, top: int = 0) -> dict[int, float]:
    if top:
        values, ids = logprobs.topk(top)
        return dict(zip(ids.tolist(), values.tolist(), strict=True))
    return dict(enumerate(logprobs.tolist()))
