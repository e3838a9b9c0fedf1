"""The gates of vLLM 0.33.0's Transformers modeling backend, emulated: the registry, enable_if
and the version floors (the parallel plans are plans.py, the attention gate attention.py).

Each function answers one gate as vLLM's own code would, with vLLM's message when it stops
there, and never needs vLLM. File and line references are to vLLM 0.33.0's wheel:
`registry.py` is vllm/model_executor/models/registry.py, `model.py` vllm/config/model.py,
`base.py`, `utils.py`, `multimodal.py`, `mtp.py`, `fusers/attention.py` are under
vllm/model_executor/models/transformers/, `hf_config.py` is vllm/transformers_utils/config.py.
The emulation is for one GPU and no parallelism except where a gate is about it (the
tensor- and pipeline-parallel plans), `model_impl="transformers"` (the user asked for this
backend) and a default `max_model_len` (the config's `max_position_embeddings`).
"""

from __future__ import annotations

import functools

from auditor.engines.common import architecture
from auditor.engines.interface import Verdict, cited, engine_line, transcribed
from auditor.engines.vllm.releases import followed

# What the gates copy from a vLLM release (its backend classes, suffix table, num_experts
# aliases, version floors, and where each was read) is that release's record (releases.py).

@transcribed(followed(), "getattr_iter")
def getattr_iter(obj, names, default=None):
    """vLLM's getattr_iter (without its warning)."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


# -- the registry gate ---------------------------------------------------------------------------

@transcribed(followed(), "backend class")
def backend_class(config, arch: str) -> str:
    """ModelConfig._get_transformers_backend_cls with runner "auto"."""
    cls = "Transformers"
    cls += "MultiModal" if is_multimodal(config) else ""
    cls += "MoE" if num_experts(config) > 0 else ""
    runner = task = None
    for suffix, defaults in followed().suffixes:
        if arch.endswith(suffix):
            runner, task = defaults
            break
    if runner == "pooling" and task in {"embed", "classify"}:
        cls += "EmbeddingModel" if task == "embed" else "ForSequenceClassification"
    else:
        cls += "ForCausalLM"
    return cls


@transcribed(followed(), "is_multimodal")
def is_multimodal(config) -> bool:
    """`hf_config is not hf_text_config`."""
    return config.get_text_config() is not config


@transcribed(followed(), "get_num_experts")
def num_experts(config) -> int:
    """ModelArchConfigConvertor.get_num_experts."""
    text = config.get_text_config()
    n = getattr_iter(text, followed().num_experts, 0)
    if isinstance(n, list):
        return n[0]
    if not n:
        n = 0
        for block in getattr(text, "block_configs", None) or ():
            get = block.get if isinstance(block, dict) else functools.partial(getattr, block)
            if get("block_type", "") == "moe":
                n = max(n, get("n_routed_experts", 0))
    return n or 0


def registry_gate(config, model_type: str, model_cls: type | None = None) -> Verdict:
    """registry.py:1285-1353 (`_try_resolve_transformers`, model_impl="transformers"), then
    whether the backend class it names exists (registry.py:1354-1361, 1418). `model_cls`: the
    class `auto_map`'s AutoModel entry loads, for remote code. What the config raises while
    vLLM reads it (a heterogeneous config's per-layer attribute) stops vLLM there too."""
    return _registry_gate(config, model_type, model_cls)  # what raises, `safely` judges


def _registry_gate(config, model_type: str, model_cls: type | None) -> Verdict:
    import transformers

    arch = architecture(config, model_type)
    if not arch:
        # registry.py:1347-1348 (resolve_model_cls / inspect_model_cls with no architecture)
        return Verdict(False, "ValueError: No model architectures are specified")
    extras: dict = {"architecture": arch}
    text = config.get_text_config()
    with engine_line(followed().engine, cited(followed(), "per-layer read")):  # get_hf_text_config's check
        lacks_heads = text is not config and not hasattr(text, "num_attention_heads")
    if lacks_heads:
        return Verdict(False, "ValueError: The text_config extracted from the model config does not have "
                              "`num_attention_heads` attribute. This indicates a mismatch between the model config "
                              "and vLLM's expectations. Please ensure that the model config is compatible with vLLM.",
                       extras)
    module = getattr(transformers, arch, None)
    if module is None:
        module = model_cls if "AutoModel" in " ".join(getattr(config, "auto_map", None) or {}) else None
    if module is None:
        return Verdict(False, f"ValueError: Cannot find model module. {arch!r} is not a registered model in the "
                              "Transformers library (only relevant if the model is meant to be in Transformers) and "
                              "'AutoModel' is not present in the model config's 'auto_map' (relevant if the model is "
                              "custom).", extras)
    if not (isinstance(module, type) and issubclass(module, transformers.PreTrainedModel)):
        return Verdict(False, "AssertionError", extras)  # registry.py:1325
    extras["model_class"] = module.__name__
    if not (module.is_backend_compatible() or module._can_set_attn_implementation()):
        return Verdict(False, f"ValueError: The Transformers implementation of {arch!r} is not compatible with vLLM.",
                       extras)
    name = backend_class(config, arch)
    classes = followed().backend_classes
    extras.update(backend_class=name, backend_class_exists=name in classes)
    if name not in classes:
        # _try_inspect_model_cls finds no such class; with model_impl="transformers" nothing else
        # serves it through this backend (registry.py:1354-1361, then 1418).
        return Verdict(False, f"ValueError: Model architectures [{arch!r}] are not supported for now "
                              f"(vLLM has no Transformers backend class {name})", extras)
    return Verdict(True, name, extras)


# -- the decorator -------------------------------------------------------------------------------

# base.py:301-305: the decoder's dynamic arguments, which vLLM's decorator looks up in its forward.
DECODER_DYNAMIC_ARGS = ("input_ids", "inputs_embeds", "position_ids")


def decorate_gate(model) -> Verdict:
    """Base._decorate_for_torch_compile (base.py:174, 295-308): the decoder class of the
    throwaway meta build (`type(model.get_decoder())`, base.py:250-255) decorated with vLLM's
    `support_torch_compile`, whose helper checks the forward's signature before it decorates
    anything (compilation/decorators.py:208-243): a decoder without `input_ids`,
    `inputs_embeds` or `position_ids` stops vLLM there, before the model it serves is built."""
    import inspect

    cls = type(model.get_decoder())
    extras = {"decoder": cls.__name__}
    if not hasattr(cls, "forward"):
        return Verdict(False, "TypeError: decorated class should have a forward method.", extras)
    parameters = inspect.signature(cls.forward).parameters
    for name in DECODER_DYNAMIC_ARGS:
        if name not in parameters:
            return Verdict(False, f"ValueError: Argument {name} not found in the forward method of {cls}", extras)
    return Verdict(True, cls.__name__, extras)


# -- enable_if -----------------------------------------------------------------------------------

def enable_if_gate(config) -> Verdict:
    """`can_enable_torch_compile` (utils.py:373-386), which the decorated decoder's `__init__`
    calls after the original one even with compilation off (decorators.py:403-408): a rope
    parameters dict without "rope_type" raises KeyError there."""
    text = config.get_text_config()
    try:
        rope_types = {rp["rope_type"] for rp in _iter_rope_parameters(text)}
    except KeyError as exc:
        return Verdict(False, f"KeyError: {exc}")
    if "dynamic" not in rope_types:
        return Verdict(True, "compile enabled", {"compile_enabled": True})
    # dynamic_rope_update_is_noop (utils.py:360-370), at the max_model_len vLLM derives
    limit = getattr(text, "max_position_embeddings", None)
    noop = limit is not None and default_max_model_len(config) <= limit
    enabled = "longrope" not in rope_types and noop
    return Verdict(True, "compile enabled" if enabled else "compile disabled (dynamic rope)",
                   {"compile_enabled": enabled})


# Rope types whose `factor` vLLM does not apply to the context length (config/model.py:2613-2620).
_UNSCALED_ROPE = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})


def default_max_model_len(config) -> float:
    """The max_model_len vLLM serves a model at when the user gives none
    (`_get_and_verify_max_len`, config/model.py:2596-2650): the text config's
    max_position_embeddings (vLLM takes the least of several such keys; the models audited here
    name this one) times the rope `factor` of rope types that scale it, except gemma3's, whose
    length is already scaled. 0 when the config names no length."""
    text = config.get_text_config()
    length = getattr(text, "max_position_embeddings", None) or 0
    rope = list(_iter_rope_parameters(config)) or list(_iter_rope_parameters(text))
    if rope and "gemma3" not in (getattr(config, "model_type", "") or ""):
        factor = 1.0
        for rp in rope:
            if rp.get("rope_type") not in _UNSCALED_ROPE:
                factor = rp.get("factor", factor)
        length *= factor if factor is not None else 1.0
    return length


@transcribed(followed(), "_iter_rope_parameters")
def _iter_rope_parameters(config):
    """vLLM's iteration of rope parameters, with is_rope_parameters_nested."""
    from transformers.configuration_utils import ALLOWED_LAYER_TYPES

    rope = getattr(config, "rope_parameters", None)
    if not isinstance(rope, dict):
        return
    if rope and set(rope.keys()).issubset({*ALLOWED_LAYER_TYPES, "main", "compress"}):
        yield from (p for p in rope.values() if isinstance(p, dict) and p)
    elif rope:
        yield rope


# -- version floors ------------------------------------------------------------------------------

def version_gate(feature: str, floor: str, installed: str) -> Verdict:
    """Base.check_version (base.py:835-842)."""
    from packaging.version import Version

    if Version(installed) < Version(floor):
        return Verdict(False, f"ImportError: Transformers modeling backend requires transformers>={Version(floor)} "
                              f"for {feature}, but got {Version(installed)}")
    return Verdict(True, f"transformers {installed} >= {floor}")


def has_video_processor(model_type: str) -> bool:
    """Whether vLLM's processing info would see a video processor (multimodal.py:111-116)."""
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    return model_type in VIDEO_PROCESSOR_MAPPING_NAMES


def has_mtp(config) -> bool:
    """A config that sets `num_mtp_layers` can serve as an MTP draft (mtp.py:30-50)."""
    return bool(getattr(config.get_text_config(), "num_mtp_layers", None))
