"""The constraints models assert, repaired on the new values of one config (a dict, in place).

Each function takes the constructor arguments about to be given (`new`), and some the old ones.
"""

from __future__ import annotations

import math
from typing import Any

from auditor.models.tiny import fields


def heads(new: dict[str, Any]) -> None:
    """Head counts divide their width; key-value heads divide heads."""
    width = next((new[n] for n in ("hidden_size", "d_model", "n_embd", "embed_dim", "dim")
                  if fields.is_int(new.get(n)) and new[n] > 0), None)
    if not width:
        return
    if fields.is_int(new.get("head_dim")) and new["head_dim"] > 0:
        return  # heads * head_dim need not be the width
    for name in ("num_attention_heads", "num_heads", "n_head", "n_heads", "attention_heads",
                 "encoder_attention_heads", "decoder_attention_heads"):
        if fields.is_int(new.get(name)) and new[name] > 0:
            new[name] = divisor_at_most(width, new[name])
    heads = next((new[n] for n in ("num_attention_heads", "num_heads", "n_head", "n_heads")
                  if fields.is_int(new.get(n)) and new[n] > 0), None)
    for name in ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"):
        if heads and fields.is_int(new.get(name)) and new[name] > 0:
            new[name] = divisor_at_most(heads, new[name])


def state_spaces(new: dict[str, Any]) -> None:
    """Mamba heads times their dim is the expanded width; groups divide the heads."""
    for width, expand, heads, head_dim, groups in (
        ("hidden_size", "mamba_expand", "mamba_n_heads", "mamba_d_head", "mamba_n_groups"),
        ("hidden_size", "expand", "num_heads", "head_dim", "n_groups"),
        ("hidden_size", "mamba_expand", "mamba_num_heads", "mamba_head_dim", "n_groups"),
        ("hidden_size", "expand", "mamba_num_heads", "mamba_head_dim", "n_groups"),
    ):
        if not all(fields.is_int(new.get(k)) for k in (width, expand, heads)) or head_dim not in new:
            continue
        inner = new[width] * new[expand]
        if fields.is_int(new.get("mamba_d_ssm")):  # falcon-h1 names the expanded width
            new["mamba_d_ssm"] = inner
        new[heads] = divisor_at_most(inner, new[heads])
        new[head_dim] = inner // new[heads]
        if fields.is_int(new.get(groups)) and new[groups] > 0:
            new[groups] = divisor_at_most(new[heads], new[groups])


def sums(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A short list that summed to a width (reformer's axial embedding dims) sums to the new one."""
    widths = {old[k]: new[k] for k in old if fields.WIDTH.fullmatch(k) and fields.is_int(old[k]) and fields.is_int(new.get(k))}
    for name, value in old.items():
        if (isinstance(value, (list, tuple)) and 2 <= len(value) <= 4 and all(fields.is_int(i) and i > 0 for i in value)
                and sum(value) in widths and sum(value) != widths[sum(value)] and new.get(name) == value):
            new[name] = type(value)(_proportional(list(value), widths[sum(value)]))


def stage_factor(values: dict[str, Any], widest: int) -> int:
    """One power of two dividing every per-stage width list of a config, so they stay consistent."""
    largest = max((i for k, v in values.items() if fields.STAGE_WIDTHS.fullmatch(k) and isinstance(v, (list, tuple))
                   for i in v if fields.is_int(i)), default=0)
    factor = 1
    while largest // (factor * 2) >= widest:
        factor *= 2
    return factor


def divisor_at_most(number: int, limit: int) -> int:
    return max(d for d in range(1, max(1, min(number, limit)) + 1) if number % d == 0)


_DEFAULT_SECTIONS = 3  # models that fall back to a built-in mrope_section split it in three


def rope(new: dict[str, Any], cls: type) -> None:
    """Multimodal rope sections sum to half the rotary part of the head dim."""
    rope = new.get("rope_parameters")
    if not isinstance(rope, dict):
        return
    half = _rotary_dim(new, rope) // 2
    if not half:
        return
    sections = rope.get("mrope_section")
    if sections is None and "mrope_section" in getattr(cls, "ignore_keys_at_rope_validation", ()):
        sections = [1] * _DEFAULT_SECTIONS  # the model would use its own full-size default
    if isinstance(sections, (list, tuple)) and sections and sum(sections) != half:
        rope["mrope_section"] = _proportional(list(sections), half)


def _rotary_dim(new: dict[str, Any], rope: dict[str, Any]) -> int:
    if fields.is_int(new.get("qk_rope_head_dim")):
        return new["qk_rope_head_dim"]
    head_dim = new.get("head_dim")
    if not fields.is_int(head_dim):
        width, heads = new.get("hidden_size"), new.get("num_attention_heads")
        head_dim = width // heads if fields.is_int(width) and fields.is_int(heads) and heads else 0
    factor = rope.get("partial_rotary_factor") or new.get("partial_rotary_factor") or 1.0
    return int(head_dim * factor)


def _proportional(parts: list[int], total: int) -> list[int]:
    """`parts` rescaled to sum to `total`, each at least 1 where the total allows."""
    old_total = sum(parts) or 1
    scaled = [max(1, math.floor(p * total / old_total)) for p in parts]
    i = 0
    while sum(scaled) < total:
        scaled[i % len(scaled)] += 1
        i += 1
    while sum(scaled) > total and max(scaled) > 1:
        scaled[scaled.index(max(scaled))] -= 1
    return scaled


def backbone(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Output features are names of stages: the constructor derives them from moved indices."""
    if "out_features" in new and new.get("out_indices") != old.get("out_indices"):
        new["out_features"] = None

