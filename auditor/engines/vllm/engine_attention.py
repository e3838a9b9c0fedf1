"""Attention as a serving engine runs it: one opaque custom op, dispatched through transformers' registry.

vLLM's Transformers backend sets `_attn_implementation = "vllm"` on the text config before it
builds the model (`Base._patch_config` in vllm/model_executor/models/transformers/base.py, 0.33.0:
`self.text_config._attn_implementation = VLLM_ATTN_IMPL`, with `text_config =
config.get_text_config()`; the config's setter carries it to the text config's own sub-configs,
and a multimodal model's vision or audio towers keep theirs) and registers `vllm_attention_forward`
in `ALL_ATTENTION_FUNCTIONS` (vllm/model_executor/models/transformers/__init__.py). That function
calls vLLM's `Attention`, a custom op dynamo does not trace into: a graph break inside the attention
function the engine replaces never happens under the engine, and one outside it still does. vLLM
registers no mask function, so transformers' masking_utils skips building the mask ("For TGI/vLLM
backends ... we don't need a mask!") and the attention op makes the causal and sliding-window pattern
itself, from the layer's settings.

This module does the same with an op of ours, `auditor::attention` (SDPA inside, CPU and CUDA,
a fake implementation so dynamo traces it as one node), registered under ENGINE_ATTENTION. Unlike
vLLM it registers transformers' sdpa mask function with it, so that the function gets the very mask
`sdpa` gets and is exact on every type: a graph break in masking_utils still counts under it, where
vLLM would skip the mask. ENGINE_ATTENTION_UNMASKED skips the masks as vLLM does.

    with engine_attention(model):     # or: restore = use_engine_attention(model); ...; restore()
        model(**feed)

The function is exact: for every module it returns what the model's default attention (transformers'
`sdpa`, or the model's `eager` function: use_engine_attention picks the variant) returns, given what
transformers passes: GQA by repeating key/value heads, `scaling` (None: 1/sqrt(head_dim)), causal
when the module is and no mask came (eager: only through the mask), the mask as given when one came,
`sliding_window`, `position_bias` and sparse attention's `indices` made into the mask, `softcap` and
attention sinks (`s_aux`, `sinks`) as the models' eager functions compute them (vLLM's `Attention`
takes them as `logits_soft_cap` and `sinks`; SDPA cannot express them, so the op writes those layers'
softmax out), output transposed to [batch, tokens, heads, head_dim] as `sdpa_attention_forward`
returns it. Dropout is not applied: the engine serves in eval mode. minimax_m3_vl's `block_indices`
are not expressed: such a call raises instead of silently attending everywhere.
`scripts/engine_attention_exact.py` measures it on every model type.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

ENGINE_ATTENTION = "auditor_engine"  # the name in ALL_ATTENTION_FUNCTIONS, as vLLM's is "vllm"
# The same function with eager's masks (additive floats), for a model whose default attention is eager:
# the masks are the model's as well as the attention function's (bigbird_pegasus's encoder adds its
# mask to its own scores, so an sdpa mask, boolean, would change its output).
ENGINE_ATTENTION_EAGER_MASKS = "auditor_engine_eager_masks"
# The same function without a mask function, as vLLM registers none: transformers skips the masks and
# the op makes the causal and sliding-window pattern itself. Not exact where a model's mask is more
# than that (padding to a block size, chunked or sparse attention), and a model that reads the mask
# crashes on None: what vLLM's attention would meet too (scripts/engine_attention_exact.py --unmasked).
ENGINE_ATTENTION_UNMASKED = "auditor_engine_unmasked"


@torch.library.custom_op("auditor::attention", mutates_args=(), device_types=("cpu", "cuda"))
def attention_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
                 scale: float, is_causal: bool, window: int, softcap: float,
                 sinks: torch.Tensor | None) -> torch.Tensor:
    """Attention of [batch, heads, tokens, dim] query/key/value, returned as [batch, tokens, heads, dim].

    `mask`: bool (True attends) or additive float, as SDPA takes it; `is_causal` only without one
    (sdpa_attention_forward's rule); `window` > 0: the sliding window made into the mask (causal:
    kv > q - window, as masking_utils' sliding_window_overlay); `softcap` > 0: tanh capping of the
    scores; `sinks`: a logit per head ([heads]) or per head and token ([batch, heads, tokens, 1]) joined
    to each softmax and dropped after (gpt_oss's and inkling2's eager functions)."""
    return _attention(query, key, value, mask, scale, is_causal, window, softcap, sinks)


@attention_op.register_fake
def _attention_fake(query, key, value, mask, scale, is_causal, window, softcap, sinks):
    batch = torch.sym_max(query.shape[0], key.shape[0])  # SDPA broadcasts the batch (learned queries of batch 1)
    return query.new_empty(batch, query.shape[2], query.shape[1], value.shape[-1])


def _attention(query, key, value, mask, scale, is_causal, window, softcap, sinks):
    """The op's real implementation (a plain function, so a test can put a graph break in it)."""
    groups = query.shape[1] // key.shape[1]
    if groups > 1:  # transformers' repeat_kv: key/value head h serves query heads h*groups .. h*groups+groups-1
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    if window > 0:
        mask, is_causal = _windowed(mask, query.shape[2], key.shape[2], window, is_causal, query.device), False
    if softcap > 0 or sinks is not None:
        output = _explicit(query, key, value, mask, scale, is_causal, softcap, sinks)
    else:
        output = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scale,
                                                                  is_causal=is_causal)
    return output.transpose(1, 2).contiguous()


def _windowed(mask, q_length: int, kv_length: int, window: int, causal: bool, device) -> torch.Tensor:
    """`mask` (None: causal or not) limited to the sliding window: a given mask holds the causality
    (inkling's position-bias mask), so only the window's lower bound joins it."""
    q_index = torch.arange(q_length, device=device)[:, None]
    kv_index = torch.arange(kv_length, device=device)[None, :]
    if mask is None and causal:  # masking_utils: causal_mask_function and sliding_window_overlay
        return (kv_index <= q_index) & (kv_index > q_index - window)
    if mask is None:
        return (q_index - kv_index).abs() <= window  # sliding_window_bidirectional_overlay
    inside = kv_index > q_index - window
    return mask & inside if mask.dtype == torch.bool else mask.masked_fill(~inside, torch.finfo(mask.dtype).min)


def _explicit(query, key, value, mask, scale, is_causal, softcap, sinks):
    """The softmax written out, as the models' eager functions do (gemma2's softcap, gpt_oss's sinks)."""
    scores = torch.matmul(query, key.transpose(2, 3)) * scale
    if softcap > 0:
        scores = torch.tanh(scores / softcap) * softcap
    if is_causal:
        mask = torch.ones(query.shape[2], key.shape[2], dtype=torch.bool, device=query.device).tril()
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    elif mask is not None:
        scores = scores + mask
    if sinks is None:
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    else:
        # one logit a head (gpt_oss's parameter), or one a head and token (inkling2's [batch, heads, tokens, 1])
        sink = sinks.reshape(1, -1, 1, 1) if sinks.dim() == 1 else sinks
        sink = sink.expand(scores.shape[0], scores.shape[1], scores.shape[2], 1).to(scores.dtype)
        joined = torch.cat([scores, sink], dim=-1)
        joined = joined - joined.max(dim=-1, keepdim=True).values
        weights = torch.softmax(joined, dim=-1, dtype=joined.dtype)[..., :-1].to(query.dtype)
    return torch.matmul(weights, value)


def engine_attention_forward(module, query, key, value, attention_mask, dropout: float = 0.0,
                             scaling: float | None = None, is_causal: bool | None = None, **kwargs):
    """The function transformers calls for a layer under the engine's attention: (output, None), as sdpa's.

    The keywords follow `sdpa_attention_forward` (transformers/integrations/sdpa_attention.py) and the
    models' calls: gpt2 passes the mask positionally, gemma2 `softcap`, gpt_oss `s_aux`, t5
    `position_bias`, dots3_note `indices`; everything else a model passes (position_ids, flash's
    cu_seq_lens...) changes nothing for SDPA either. Causal as sdpa: the call's `is_causal`, else the
    module's, and only without a mask."""
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    return _forward(module, query, key, value, attention_mask, scaling, causal, kwargs)


def engine_attention_eager_forward(module, query, key, value, attention_mask, dropout: float = 0.0,
                                   scaling: float | None = None, **kwargs):
    """engine_attention_forward for a model whose default attention is eager: causal only through its
    mask, as the models' eager functions are (bridgetower's cross-modal layers say `is_causal` and get no
    mask: eager attends everywhere there, where sdpa would not)."""
    kwargs.pop("is_causal", None)
    return _forward(module, query, key, value, attention_mask, scaling, False, kwargs)


def _forward(module, query, key, value, attention_mask, scaling, causal, kwargs):
    if kwargs.get("block_indices") is not None:  # minimax_m3_vl's block-sparse selection, made by its indexer
        raise NotImplementedError(f"{type(module).__name__} selects key blocks (block_indices), which the "
                                  "engine's attention does not express")
    causal = query.shape[2] > 1 and attention_mask is None and causal  # sdpa_attention_forward's rule
    mask, position_bias = attention_mask, kwargs.get("position_bias")
    if causal and key.shape[2] > query.shape[2]:  # sdpa_attention_forward crops to the query's length
        length = query.shape[2]
        key, value = key[:, :, :length], value[:, :, :length]
        position_bias = None if position_bias is None else position_bias[..., :length]
    window = kwargs.get("sliding_window") if attention_mask is None else None  # a given mask holds its window
    if position_bias is not None:
        from transformers.integrations.sdpa_attention import create_position_bias_mask

        mask, causal = create_position_bias_mask(position_bias, attention_mask, causal, query, key), False
    if kwargs.get("indices") is not None:
        mask, causal = _selected(kwargs["indices"], mask, causal, query, key), False
    scale = scaling if scaling is not None else 1.0 / math.sqrt(query.shape[-1])
    sinks = kwargs.get("s_aux", kwargs.get("sinks"))
    output = attention_op(query, key, value, mask, float(scale), bool(causal), int(window or 0),
                          float(kwargs.get("softcap") or 0.0), sinks)
    return output, None


def _selected(indices, mask, causal: bool, query, key):
    """The mask limited to the keys sparse attention chose ([batch, tokens, top-k] indices), as the models
    that pass `indices` (deepseek_v32, dots3_note, glm_moe_dsa...) mask their scores for eager and sdpa."""
    chosen = torch.zeros(indices.shape[0], indices.shape[1], key.shape[2], dtype=torch.bool, device=key.device)
    chosen = chosen.scatter(-1, indices.long(), True).unsqueeze(1)
    if mask is None:
        q_length, kv_length = query.shape[2], key.shape[2]
        return chosen & torch.ones(q_length, kv_length, dtype=torch.bool, device=key.device).tril() if causal else chosen
    if mask.dtype == torch.bool:
        return mask & chosen
    return mask.masked_fill(~chosen, torch.finfo(mask.dtype).min)


def register() -> None:
    """Registers ENGINE_ATTENTION and ENGINE_ATTENTION_EAGER_MASKS, with transformers' sdpa and eager
    masks (so that the function and the model get the masks they get by default, and are exact), and
    ENGINE_ATTENTION_UNMASKED without a mask function (as vLLM's "vllm"); idempotent."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask, sdpa_mask
    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(ENGINE_ATTENTION, engine_attention_forward)
    AttentionInterface.register(ENGINE_ATTENTION_EAGER_MASKS, engine_attention_eager_forward)
    AttentionInterface.register(ENGINE_ATTENTION_UNMASKED, engine_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ENGINE_ATTENTION, sdpa_mask)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ENGINE_ATTENTION_EAGER_MASKS, eager_mask)


def use_engine_attention(model, masks: bool = True) -> Callable[[], None] | None:
    """Puts a built model on the engine's attention as vLLM does: the text config's `_attn_implementation`,
    which its setter carries to the text config's sub-configs. With `masks`, transformers builds the
    masks it builds for the model's default attention (eager's, else sdpa's); without, none, as for vLLM.
    Returns the undo (each of those configs gets back the implementation it had), or None, changing
    nothing, when no module on the text side dispatches through the registry: such a model (falcon: its
    layers branch on "sdpa" and run their own math otherwise) would only be pushed off its own path, and
    vLLM's attention gate stops it anyway."""
    register()
    text_config = model.config.get_text_config()  # vLLM's Base.__init__: self.config.get_text_config()
    configs = list(_subtree(text_config))
    if not dispatches_attention(model, configs):
        return None
    before = [(config, config._attn_implementation_internal) for config in configs]
    text_config._attn_implementation = (ENGINE_ATTENTION_UNMASKED if not masks
                                        else ENGINE_ATTENTION_EAGER_MASKS if before[0][1] == "eager"
                                        else ENGINE_ATTENTION)

    def restore() -> None:
        for config, implementation in before:
            config._attn_implementation_internal = implementation  # the attribute, not the recursive setter
    return restore


@contextmanager
def engine_attention(model, masks: bool = True) -> Iterator[bool]:
    """The model runs on the engine's attention inside the block (yields whether it dispatches at all,
    see use_engine_attention), on its own after it."""
    restore = use_engine_attention(model, masks)
    try:
        yield restore is not None
    finally:
        if restore is not None:
            restore()


def dispatches_attention(model, configs: list | None = None) -> bool:
    """Whether a module of `model` whose config is one of `configs` (default: the text config and its
    sub-configs) looks its attention function up in ALL_ATTENTION_FUNCTIONS (the name in its forward's
    code, nested functions included: the lookup vLLM's AttentionFuser parses for)."""
    configs = list(_subtree(model.config.get_text_config())) if configs is None else configs
    ids = {id(config) for config in configs}
    return any(id(getattr(module, "config", None)) in ids and _looks_up(type(module).forward)
               for module in model.modules())


@functools.cache
def _looks_up(forward) -> bool:
    code = getattr(inspect.unwrap(forward), "__code__", None)
    return code is not None and "ALL_ATTENTION_FUNCTIONS" in _names(code)


def _names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def _subtree(config) -> Iterator[Any]:
    """`config` and its sub-configs at any depth: what the `_attn_implementation` setter reaches."""
    yield config
    for key in getattr(config, "sub_configs", {}):
        if (sub := getattr(config, key, None)) is not None:
            yield from _subtree(sub)
