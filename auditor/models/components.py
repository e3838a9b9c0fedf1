"""The classes a serving engine decorates, chosen the way vLLM's Transformers backend does.

The decoder is `type(model.get_decoder())` (vLLM 0.33.0, transformers/base.py:253). An engine's
own encoder lookup is the engine's (auditor.engines.vllm.encoders). `find_components` is the
compile check's looser lookup: every config, any error caught, None left out, one component
per distinct class. Transformers versions whose `get_encoder` has no `modality` give the
decoder only, and say so.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

MODALITIES = ("image", "video", "audio")

# What vLLM's backend gives the decoder: a PreTrainedModel keeps its batch dimension.
DECODER_DIMS = {"input_ids": 1, "inputs_embeds": 1, "position_ids": -1}


@dataclass(frozen=True)
class Component:
    name: str  # "decoder", "encoder:image", "encoder:image+video"
    cls: type
    dynamic_arg_dims: dict | None  # None: inferred from forward's annotations


@dataclass(frozen=True)
class Components:
    items: tuple[Component, ...]
    note: str = ""  # why encoders are missing, when the transformers version cannot tell


def encoder_lookup_by_modality(model) -> bool:
    """Whether the model has transformers 5's `get_encoder(modality=...)`. Base models of 4.x
    have no `get_encoder` at all, and 5.0's takes no modality: either way, no encoders."""
    get_encoder = getattr(model, "get_encoder", None)
    return callable(get_encoder) and "modality" in inspect.signature(get_encoder).parameters


def find_components(model) -> Components:
    items = [Component("decoder", type(model.get_decoder()), DECODER_DIMS)]
    if not encoder_lookup_by_modality(model):
        return Components(tuple(items), note="this transformers' get_encoder has no modality: decoder only")
    by_class: dict[type, list[str]] = {}
    for modality in MODALITIES:
        try:
            encoder = model.get_encoder(modality=modality)
        except Exception:
            continue
        if encoder is None or type(encoder) is type(model):
            continue
        by_class.setdefault(type(encoder), []).append(modality)
    for cls, modalities in by_class.items():
        items.append(Component("encoder:" + "+".join(modalities), cls, None))
    return Components(tuple(items))
