"""The backend check's SGLang gates computed by SGLang's own code (needs SGLang; the `sglang` policy).

SGLang's own code, called as it stands: `get_hf_text_config`, `is_generation_model`,
`is_multimodal_model` and `resolve_transformers_arch` (sglang/srt/model_loader/utils.py) for
the registry; `_resolve_attention_backend_model_cls` (sglang/srt/models/transformers.py); and
the methods of `TransformersBase` themselves, `pipeline_parallel`, `_get_model_tp_plan`,
`_infer_tp_plan_from_children`, `_normalize_tp_plan` with `_normalize_tp_style`,
`recursive_replace`, `_create_attention_instances` (with its real `divide` and `RadixAttention`),
`replace_vocab_embed_class` and `can_enable_torch_compile`, each called on a stand-in `self`
that holds what TransformersBase.__init__ would have set (the built model, the configs, layer
bounds).

Stand-ins, for SGLang's parallel runtime (which needs its distributed groups and a device):
`get_parallel()` (tensor-parallel size 1, expert-parallel size 1), a two-stage pipeline group
of which this is the first rank, and the layers that would allocate weights on the device:
`replace_linear_class` and `replace_rms_norm_class` return the module unchanged (the latter
after reading what SGLang's reads), `VocabParallelEmbedding` is an empty module that pads the
vocab size as SGLang's does, and the pipeline split's missing layers are the layers themselves.
So nothing in the shared meta build is replaced. Not called: ModelConfig (its multimodal rule
is the emulation's, given SGLang's own `is_multimodal_model`), the build (SGLang builds exactly
as the emulation does) and MoEMixin.recursive_replace's config reads (the emulation's, before
SGLang's own recursive_replace), which need SGLang's MoE runtime.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from types import SimpleNamespace

from auditor.core.messages import message_of
from auditor.engines.interface import Verdict
from auditor.engines.sglang import gates, modules


@functools.cache
def _sglang():
    """SGLang's Transformers fallback module (imports torch's and SGLang's layers: once)."""
    import sglang.srt.models.transformers as module

    return module


@contextlib.contextmanager
def _runtime_stand_ins(**names) -> Iterator[object]:
    """SGLang's module with the names given standing in for its runtime while in the block
    (scoped to this module's globals, put back on exit)."""
    module = _sglang()
    parallel = SimpleNamespace(tp_size=1, moe_ep_size=1, tp_rank=0)
    names = {"get_parallel": lambda: parallel, **names}
    saved = {name: module.__dict__[name] for name in names}
    module.__dict__.update(names)
    try:
        yield module
    finally:
        module.__dict__.update(saved)


def _self(module, **fields):
    """A stand-in TransformersBase `self`: `fields`, and TransformersBase's own methods bound to it."""
    base = module.TransformersBase
    stand_in = SimpleNamespace(quant_config=None, skip_prefixes=[], start_layer=0, **fields)
    for name in ("_get_model_pp_plan", "_register_missing_prefix", "_get_submodule_or_none", "_get_model_tp_plan",
                 "_infer_tp_plan_from_children", "_normalize_tp_plan"):
        setattr(stand_in, name, getattr(base, name).__get__(stand_in))
    stand_in._LANGUAGE_MODEL_CHILD_NAMES = base._LANGUAGE_MODEL_CHILD_NAMES
    return stand_in


def registry_gate(config, model_cls: type | None = None) -> Verdict:
    from sglang.srt.configs.model_config import ModelImpl, is_generation_model, is_multimodal_model
    from sglang.srt.model_loader.utils import resolve_transformers_arch
    from sglang.srt.utils.hf_transformers_utils import get_hf_text_config

    if config is None:
        return Verdict(False, "TypeError: 'NoneType' object is not subscriptable")
    archs = list(config.architectures)
    extras: dict = {"architecture": archs[0], "model_impl": "transformers"}
    try:
        text = get_hf_text_config(config)
        multimodal = not getattr(config, "language_model_only", False) and (
            is_multimodal_model(archs) or text is not config or hasattr(config, "vision_config")
            or hasattr(config, "audio_config"))
        stand_in = SimpleNamespace(hf_config=config, hf_text_config=text, is_generation=is_generation_model(archs),
                                   is_multimodal=multimodal, model_impl=ModelImpl.TRANSFORMERS,
                                   model_path=getattr(config, "_name_or_path", ""), revision=None)
        [name] = resolve_transformers_arch(stand_in, archs)
    except Exception as exc:
        return Verdict(False, message_of(exc), extras)
    exists = name in {cls.__name__ for cls in _sglang().EntryClass}
    extras.update(backend_class=name, backend_class_exists=exists)
    if not exists:
        return Verdict(False, f"ValueError: Model architectures ['{name}'] are not supported for now.", extras)
    return Verdict(True, name, extras)


def attention_backend_gate(config, model_cls: type | None = None) -> Verdict:
    found = _sglang()._resolve_attention_backend_model_cls(config)
    if not (getattr(found, "_supports_attention_backend", True) if found else True):
        # the message TransformersBase.__init__ raises (transformers.py:626-630)
        return Verdict(False, f"ValueError: Model {found} does not support custom attention backends "
                              "(_supports_attention_backend=False). The Transformers backend requires custom "
                              "attention support.", {"model_class": found.__name__})
    return Verdict(True, "supports custom attention backends", {"model_class": getattr(found, "__name__", None)})


def pp_plan_gate(model, text) -> Verdict:
    group = SimpleNamespace(world_size=2, rank_in_group=0, is_first_rank=True, is_last_rank=False)
    with _runtime_stand_ins() as module:
        stand_in = _self(module, model=model, config=model.config, text_config=text, pp_group=group,
                         end_layer=getattr(text, "num_hidden_layers", 0))
        stand_in._set_submodule = lambda name, new: None  # the shared build keeps its modules
        stand_in._make_pp_missing_layer = lambda original: original
        module.TransformersBase.pipeline_parallel(stand_in)
    return Verdict(True, f"layers {stand_in.start_layer}-{stand_in.end_layer} on the first of two stages",
                   {"start_layer": stand_in.start_layer, "end_layer": stand_in.end_layer})


def tp_plan_gate(model, config, text, moe: bool) -> Verdict:
    experts = modules.moe_replace(model, config, text) if moe else 0

    def replace_rms_norm_class(norm, hidden_size):
        modules.replace_rms_norm(norm, hidden_size)
        return norm

    with _runtime_stand_ins(replace_linear_class=lambda linear, style, quant_config=None, prefix="": linear,
                            replace_rms_norm_class=replace_rms_norm_class) as module:
        stand_in = _self(module, model=model, config=config, text_config=text)
        module.TransformersBase.recursive_replace(stand_in)
        entries = len(stand_in._normalize_tp_plan(stand_in._get_model_tp_plan()))
    return Verdict(True, f"{entries} plan entries" if entries else "no tensor parallel plan",
                   {"entries": entries, "moe_layers": experts})


def attention_gate(model, config, text, layers: int) -> Verdict:
    with _runtime_stand_ins() as module:
        stand_in = _self(module, model=model, config=config, text_config=text, end_layer=layers)
        instances = module.TransformersBase._create_attention_instances(stand_in)
    cross = any(attn.is_cross_attention for attn in instances.values())
    sliding = sum(attn.sliding_window_size != -1 for attn in instances.values())
    return Verdict(True, f"{len(instances)} attention instances" + (" (cross attention)" if cross else ""),
                   {"layers": len(instances), "cross_attention": cross, "sliding_layers": sliding})


def vocab_embed_gate(model, text, vocab_size) -> Verdict:
    import torch.nn as nn

    class VocabParallelEmbedding(nn.Module):  # stand-in: SGLang's shards the vocab over its TP group
        def __init__(self, num_embeddings, embedding_dim, *, org_num_embeddings=None, **kwargs):
            super().__init__()
            self.embedding_dim = embedding_dim
            ((org_num_embeddings or num_embeddings) + 64 - 1) // 64  # pad_vocab_size

    def keep(new):  # set_input_embeddings must take a module: the old one, so nothing changes
        model.set_input_embeddings(model.get_input_embeddings())

    held = SimpleNamespace(get_input_embeddings=model.get_input_embeddings, set_input_embeddings=keep)
    with _runtime_stand_ins(VocabParallelEmbedding=VocabParallelEmbedding) as module:
        stand_in = SimpleNamespace(model=held, text_config=text, vocab_size=vocab_size, embed_scale=None,
                                   log_replacement=lambda *args: None)
        module.TransformersBase.replace_vocab_embed_class(stand_in, held)
    return Verdict(True, "replaced", {})


def compile_gate(config) -> Verdict:
    return gates.compile_gate(config, enabled=_sglang().can_enable_torch_compile)
