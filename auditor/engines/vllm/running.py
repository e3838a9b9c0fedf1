"""vLLM running a checkpoint for real (needs vLLM): the `outputs` check's engine side, `Engine.runs`.

As a user serves a model offline: `vllm.LLM(model=FOLDER, model_impl=IMPL)`, its ids as the
prompt (`skip_tokenizer_init` where the folder has no tokenizer: the check compares ids, not
text), prompt logprobs over the whole vocabulary at every position and a few greedy tokens with
their top logprobs (`SamplingParams(temperature=0)`); a pooling model's embedding (`LLM.embed`). The engine runs in this process
(`VLLM_ENABLE_V1_MULTIPROCESSING=0`), so a worker imports vLLM and initializes its platform once
and every later type pays only for its own `LLM` (seconds). Eager (`enforce_eager`): the compile
is the compile check's; here each type's start stays within seconds on a CPU.

The engine picks its platform (its CPU build: the CPU, its CUDA build: the GPU); `head_size`
asks the attention backend vLLM selects there which head sizes its kernels take, so the tiny
checkpoint is made in a shape it runs. On a CPU the KV cache is given 1 GiB
(`VLLM_CPU_KVCACHE_SPACE`) and the memory fraction 0.1: vLLM's CPU worker otherwise reserves most
of the machine's memory and refuses to start beside the sweep's other workers.
"""

from __future__ import annotations

import gc
import os
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from auditor.engines.outputs import TOP, Outputs
from auditor.engines.vllm.preparation import process_group_gone

# The two ways vLLM serves a type, as a row names them: (the row's component under `outputs/vllm`,
# vLLM's `model_impl`). "auto" takes vLLM's native class where its registry has one.
PATHS = (("", "auto"), ("transformers", "transformers"))
MIN_HEAD_SIZE = 32
_ENVIRONMENT = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "1"}


def _environment() -> None:
    """vLLM in this process, with a KV cache a shared machine has room for (a user's own setting kept)."""
    from auditor.engines.vllm.shims import target_device

    for name, value in _ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    target_device()


def head_size(dtype: str) -> int:
    """The smallest head size (at least MIN_HEAD_SIZE) of the attention backend vLLM selects on
    this platform for `dtype` (its `get_supported_head_sizes`; an empty list: any)."""
    import torch

    _environment()
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.v1.attention.selector import get_attn_backend

    from auditor.engines.vllm.shims import config_shims

    with config_shims():
        config = VllmConfig()
    with set_current_vllm_config(config):
        backend = get_attn_backend(head_size=64, dtype=getattr(torch, dtype), kv_cache_dtype="auto")
    sizes = sorted(size for size in backend.get_supported_head_sizes() if size >= MIN_HEAD_SIZE)
    return sizes[0] if sizes else MIN_HEAD_SIZE


def run(folder: Path, prompt: Sequence[int], impl: str, dtype: str, greedy: int, vocab: int,
        task: str = "generate", tokenizer: bool = False, classes: Sequence[type] = ()) -> Outputs:
    """vLLM's LLM on `folder` with `model_impl=impl`: its outputs (auditor.engines.outputs.Outputs;
    extras: the architecture vLLM resolved, whether that is its Transformers backend, the start's
    and the generation's seconds). `task` "embed": a pooling model, its embedding without
    vLLM's activation (normalization), and the pooling it used. `classes`: transformers' classes of
    the model, put back as they were after (vLLM's Transformers backend decorates the decoder class
    for good: a later build of that class in this worker, the next type's reference, would be vLLM's)."""
    from auditor.engines.vllm.constructor import classes_restored

    with classes_restored(classes):
        return _run(folder, prompt, impl, dtype, greedy, vocab, task, tokenizer)


def _run(folder: Path, prompt: Sequence[int], impl: str, dtype: str, greedy: int, vocab: int, task: str,
         tokenizer: bool) -> Outputs:
    _environment()
    from vllm import LLM

    # No shim here: what the engine needs to run a forward, this machine has or the row says it lacks.
    start = time.perf_counter()
    try:
        llm = LLM(model=str(folder), model_impl=impl, skip_tokenizer_init=not tokenizer, enforce_eager=True,
                  dtype=dtype, max_model_len=len(prompt) + greedy + 8, max_logprobs=-1, gpu_memory_utilization=0.1,
                  seed=0)
        try:
            return _outputs(llm, prompt, greedy, vocab, task, time.perf_counter() - start)
        finally:
            del llm
    except BaseException as exc:
        # An engine that failed, in its start or its run, is still held by the exception's frames:
        # collected later, during the next type's start, its shutdown destroyed that engine's
        # process groups. Those frames' locals are cleared (their files and lines stay: the row
        # names them), so that it is collected below, before the next type.
        traceback.clear_frames(exc.__traceback__)
        raise
    finally:
        gc.collect()
        _cleaned()


def _outputs(llm, prompt: Sequence[int], greedy: int, vocab: int, task: str, started: float) -> Outputs:
    from vllm import PoolingParams, SamplingParams

    begun = time.perf_counter()
    config = llm.llm_engine.model_config
    extras = {"architecture": getattr(config, "architecture", ""),
              "transformers_backend": bool(config.using_transformers_backend()),
              "start_seconds": round(started, 2), "enforce_eager": True}
    if task == "embed":
        out = llm.embed([{"prompt_token_ids": list(prompt)}], pooling_params=PoolingParams(use_activation=False),
                        use_tqdm=False)[0]
        extras.update(pooling=str(config.pooler_config.get_seq_pooling_type()),
                      run_seconds=round(time.perf_counter() - begun, 2))
        return Outputs((), (), (), extras, embedding=tuple(float(v) for v in out.outputs.embedding))
    params = SamplingParams(max_tokens=greedy, temperature=0.0, prompt_logprobs=vocab, logprobs=TOP,
                            ignore_eos=True, detokenize=False)
    out = llm.generate([{"prompt_token_ids": list(prompt)}], params, use_tqdm=False)[0]
    completion = out.outputs[0]
    rows = tuple({int(k): float(v.logprob) for k, v in position.items()} for position in out.prompt_logprobs[1:])
    tops = tuple({int(k): float(v.logprob) for k, v in step.items()} for step in completion.logprobs or ())
    extras["run_seconds"] = round(time.perf_counter() - begun, 2)
    return Outputs(rows, tuple(int(t) for t in completion.token_ids), tops, extras)


def _cleaned() -> None:
    """vLLM's own cleanup between two engines in one process (as its tests make it:
    `cleanup_dist_env_and_memory`), and the serves check's process group made again when next asked."""
    import contextlib

    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    with contextlib.suppress(Exception):
        cleanup_dist_env_and_memory()
    process_group_gone()
