"""Tiny configs: a model type's default config shrunk so that a real build takes seconds on a CPU.

`shrink(config)` rebuilds each config of the tree (the config and its text, vision, audio,
encoder, decoder, backbone... sub-configs) through its own class's constructor, so that what the
constructor derives (head_dim, hidden_size of a swin, layer_types, ...) is derived again from the
new sizes. A probe finds the derived fields: the config is built once without every field whose
default is None; a field that comes back with the same value is left for the constructor.

Fields are recognized by name (the tables in fields.py): layer counts become 2, widths 64, intermediate
sizes 128, heads 4, experts 4 with 2 per token, vocabularies 1024, base channel counts of
audio codecs 8, positions 2048. A field is never grown. Then the constraints models assert are
repaired: head counts divide their width and key-value heads divide heads, per-layer lists and
per-layer overrides keep the chosen layers (one of each distinct layer kind), layer indices stay
in range, special token ids stay inside the vocabulary (the same old id to the same new id across
the tree), and multimodal rope sections sum to half the rotary dim.

`tiny_model(config, device)` shrinks and builds, trying more layers when the tiny model does not
build and a narrower variant when it is large. Modules: fields.py (what a field is, by name),
shrinker.py (the walk over the tree), repairs.py (the constraints).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from auditor.core.classifier import classify
from auditor.models.tiny.shrinker import SIZES, ShrinkError, Sizes, shrink

# Tried in order when a tiny build fails: some models need more than two layers (zamba's first
# three are fixed, its shared layers need two hybrid ones) or kinds of layers only deeper ones have.
VARIANTS = (SIZES, dataclasses.replace(SIZES, layers=4, max_layers=6), dataclasses.replace(SIZES, layers=8, max_layers=8))
# Tried when the first model that builds is larger than PARAMETER_BUDGET: convolutional stages
# and audio codecs keep their channel lists in the variants above, which is safe but can be big.
NARROW = dataclasses.replace(SIZES, stage_width=256)
PARAMETER_BUDGET = 10_000_000


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())


@dataclass(frozen=True)
class TinyModel:
    config: Any
    model: Any
    sizes: Sizes

    @property
    def parameters(self) -> int:
        return parameter_count(self.model)


def tiny_model(config, device: str = "cpu", variants: tuple[Sizes, ...] = VARIANTS,
               trust_remote_code: bool = False, dtype: str = "float32") -> TinyModel:
    """The first variant of `config` that shrinks and builds on `device`.

    Raises the first build failure (ShrinkError when no variant even shrinks); a missing
    dependency, a memory error or a wish for the hub at once, since no other size would help.
    """
    failures: list[Exception] = []
    for sizes in variants:
        try:
            tiny = _attempt(config, sizes, device, trust_remote_code, dtype)
        except (ShrinkError, _BuildFailure) as exc:
            failures.append(exc)
            continue
        if tiny.parameters > PARAMETER_BUDGET:
            try:
                narrow = _attempt(config, dataclasses.replace(sizes, stage_width=NARROW.stage_width), device,
                                  trust_remote_code, dtype)
            except (ShrinkError, _BuildFailure):
                narrow = None
            if narrow is not None and narrow.parameters < tiny.parameters:
                return narrow
        return tiny
    first = next((f for f in failures if isinstance(f, _BuildFailure)), failures[0])
    raise first.__cause__ if isinstance(first, _BuildFailure) else first


class _BuildFailure(Exception):
    """A tiny config that does not build (the model's exception is the cause)."""


def _attempt(config, sizes: Sizes, device: str, trust_remote_code: bool, dtype: str) -> TinyModel:
    config_ = shrink(config, sizes)
    try:
        return TinyModel(config_, build_tiny(config_, device, trust_remote_code=trust_remote_code, dtype=dtype),
                         sizes)
    except Exception as exc:
        if classify(exc).environmental:  # a missing package, memory, the hub: no size helps
            raise
        raise _BuildFailure() from exc


def build_tiny(config, device: str = "cpu", seed: int = 0, trust_remote_code: bool = False,
               dtype: str = "float32"):
    """`AutoModel.from_config(config)` in `dtype` (a torch dtype's name) on `device`, seeded, in
    eval mode.

    `trust_remote_code` only for a `--remote-code` directory's config, as in meta.build_on_meta.
    """
    import torch
    from transformers import AutoModel

    torch.manual_seed(seed)
    with torch.device(device):
        extra = {"trust_remote_code": True} if trust_remote_code else {}
        model = AutoModel.from_config(config, dtype=getattr(torch, dtype), **extra)
    return model.eval()


__all__ = ["NARROW", "PARAMETER_BUDGET", "SIZES", "VARIANTS", "ShrinkError", "Sizes", "TinyModel", "build_tiny",
           "parameter_count", "shrink", "tiny_model"]
