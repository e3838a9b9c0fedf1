"""The gates of SGLang 0.5.23's Transformers fallback before and after its module walks, emulated:
the model class it resolves (`registry`), its refusal of `_supports_attention_backend=False`
(`attention-backend`), the input embeddings it reads (`embeddings`) and whether it compiles
(`compile-compatible`). The walks over the built model are modules.py.

Each function answers one gate as SGLang's own code would, with SGLang's message where it stops
there, and never needs SGLang. File and line references are to SGLang 0.5.23's wheel:
`transformers.py` is sglang/srt/models/transformers.py, `loader_utils.py`
sglang/srt/model_loader/utils.py, `model_config.py` sglang/srt/configs/model_config.py,
`hf_common.py` sglang/srt/utils/hf_transformers/common.py. The emulation is for
`--model-impl transformers` (the user asked for this backend, as the vLLM emulation assumes),
one GPU (tensor- and pipeline-parallel size 1, except where a gate is about it) and no
quantization. A default config names no architecture (SGLang reads `architectures[0]` of a
checkpoint's config.json); the AutoModel class the type maps to stands in for it, as for vLLM
(auditor.engines.common.architecture), and SGLang's config is a copy naming it.
"""

from __future__ import annotations

import copy

from auditor.engines.common import architecture
from auditor.engines.interface import Verdict, cited, engine_line, transcribed
from auditor.engines.sglang.releases import RELEASE

# model_config.py:2360-2388: the architectures SGLang serves as pooling models.
_POOLING_ARCHS = frozenset({
    "LlamaEmbeddingModel", "MistralModel", "LlamaForSequenceClassification",
    "LlamaForSequenceClassificationWithNormal_Weights", "InternLM2ForRewardModel", "Qwen2ForRewardModel",
    "Qwen3ForRewardModel", "Qwen2ForSequenceClassification", "Qwen3ForSequenceClassification", "Qwen3Model",
    "CLIPModel", "BertModel", "Contriever", "BertForSequenceClassification", "XLMRobertaModel",
    "XLMRobertaForSequenceClassification", "Gemma2ForSequenceClassification", "EmbeddingGemma2Model",
    "Lfm2BidirectionalModel",
})
# model_config.py:2391-2519 (`multimodal_model_archs`): of its names, those that are AutoModel
# classes of transformers, the only names the auditor's architecture can be (checkpoint names
# such as `...ForConditionalGeneration` never are).
_MULTIMODAL_ARCHS = frozenset({"CLIPModel", "MiDashengLMModel"})
# loader_utils.py:41-47
_EXPERT_ATTRS = ("num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                 "n_routed_experts")
ATTN_IMPL = "sglang"  # transformers.py:326 (registered), 617 (set)


def sglang_config(config, model_type: str):
    """A copy of `config` naming the architecture a checkpoint would (SGLang's getters patch the
    config they read: hf_common.py:519-544), with the head dim ModelConfig derives, or None where
    there is none."""
    arch = architecture(config, model_type)  # funnel's two AutoModel classes: the first
    if not arch:
        return None
    config = copy.deepcopy(config)
    config.architectures = [arch]
    _derive_head_dim(config, arch)
    return config


# model_config.py:156-164
_PURE_SSM_ARCHS = ("Mamba2ForCausalLM", "FalconMambaForCausalLM", "MambaForCausalLM")


@transcribed(RELEASE, "_derive_model_shapes")
def _derive_head_dim(config, arch: str) -> None:
    """ModelConfig._derive_model_shapes, run by ModelConfig.__init__ before any model is built
    (the record has where): a text config whose `head_dim` is missing or None gets
    `hidden_size // num_attention_heads`, written into it, and TransformersBase reads that
    (mixtral's default config has `head_dim=None`: SGLang's own loader serves it). Where the config
    lacks those, SGLang's ModelConfig raises; the gates that read them stop there instead."""
    try:
        text = text_config(config)
        if getattr(text, "head_dim", None) is None and arch not in _PURE_SSM_ARCHS:
            text.head_dim = text.hidden_size // text.num_attention_heads
    except Exception:  # noqa: BLE001 - ModelConfig's failure: the registry and attention gates say it
        return


# Where get_hf_text_config reads `num_attention_heads` globally (SGLang 0.5.23).
PER_LAYER_READS = {sub: cited(RELEASE, f"get_hf_text_config: {sub} heads") for sub in ("llm_config", "text_config")}


@transcribed(RELEASE, "get_hf_text_config")
def text_config(config):
    """get_hf_text_config without its attribute patches: the first of
    thinker_config (its text_config), llm_config, language_config, text_config, else the config.
    Raises AssertionError where SGLang asserts `num_attention_heads`."""
    arch = (getattr(config, "architectures", None) or [""])[0]
    if arch.startswith("Llava") and arch.endswith("ForCausalLM"):
        return config
    if hasattr(config, "thinker_config"):
        thinker = _as_config(config.thinker_config)
        return _as_config(thinker.text_config) if hasattr(thinker, "text_config") else thinker
    if hasattr(config, "llm_config"):
        assert hasattr(_as_config(config.llm_config), "num_attention_heads")
        return _as_config(config.llm_config)
    if hasattr(config, "language_config"):
        return _as_config(config.language_config)
    if hasattr(config, "text_config"):
        assert hasattr(_as_config(config.text_config), "num_attention_heads")
        return _as_config(config.text_config)
    return config


@transcribed(RELEASE, "get_hf_text_config (dict sub-config)")
def _as_config(sub):
    """A dict sub-config as SGLang turns it into a PretrainedConfig."""
    if isinstance(sub, dict):
        from transformers import PretrainedConfig

        return PretrainedConfig(**sub)
    return sub


@transcribed(RELEASE, "_is_moe_model")
def is_moe(config, text, arch: str) -> bool:
    """_is_moe_model."""
    if "moe" in arch.lower() or "mixtral" in arch.lower():
        return True
    for attr in _EXPERT_ATTRS:
        value = getattr(text, attr, None)
        if value is None:
            continue
        if isinstance(value, bool):
            if value:
                return True
            continue
        if isinstance(value, (int, float)):
            if value > (0 if attr == "moe_intermediate_size" else 1):
                return True
            continue
        if isinstance(value, (list, tuple, set, dict)):
            if len(value) > 0:
                return True
            continue
        if isinstance(value, str) and value == "":
            continue
        return True
    return False


@transcribed(RELEASE, "ModelConfig.is_multimodal")
def is_multimodal(config, text, arch: str) -> bool:
    """ModelConfig.is_multimodal for --model-impl transformers, or a
    text config that is not the config (loader_utils.py:83-85)."""
    lm_only = getattr(config, "language_model_only", False)
    sub = config is not text or hasattr(config, "vision_config") or hasattr(config, "audio_config")
    return (not lm_only and (arch in _MULTIMODAL_ARCHS or sub)) or config is not text


@transcribed(RELEASE, "_get_transformers_backend_arch")
def backend_class(config, text, arch: str) -> str:
    """_get_transformers_backend_arch; every name it makes is a class of
    transformers.py's EntryClass (transformers.py:1672-1685)."""
    base = "ForCausalLM"
    if arch in _POOLING_ARCHS:  # not is_generation (model_config.py:801-803)
        lowered = arch.lower()
        base = ("ForSequenceClassification" if "sequenceclassification" in lowered or "rewardmodel" in lowered
                else "EmbeddingModel")
    return ("Transformers" + ("MultiModal" if is_multimodal(config, text, arch) else "")
            + ("MoE" if is_moe(config, text, arch) else "") + base)


def registry_gate(config, model_cls: type | None = None) -> Verdict:
    """ModelConfig's text config (hf_common.py:547-613, asserting `num_attention_heads`), then
    resolve_transformers_arch (loader_utils.py:111-195) with --model-impl transformers, which
    raises nothing: a class neither transformers nor `auto_map` gives is skipped with a warning
    (loader_utils.py:146-153) and `_supports_attention_backend=False` only warns (it stops at
    attention-backend). `config`: sglang_config's copy, None where no architecture is named."""
    import transformers

    if config is None:  # model_config.py:699 reads architectures[0]
        return Verdict(False, "TypeError: 'NoneType' object is not subscriptable")
    arch = config.architectures[0]
    extras: dict = {"architecture": arch, "model_impl": "transformers"}
    # A heterogeneous config (transformers >= 5.15) raises AmbiguousGlobalPerLayerAttributeError
    # for `hasattr(config.text_config, "num_attention_heads")` (a RuntimeError, which hasattr
    # passes on): ModelConfig.__init__ (model_config.py:636) stops there, before any gate.
    at = PER_LAYER_READS["llm_config" if hasattr(config, "llm_config") else "text_config"]
    try:
        with engine_line(RELEASE.engine, at, **extras, where="get_hf_text_config"):
            text = text_config(config)
    except AssertionError:
        return Verdict(False, "AssertionError", {**extras, "where": "get_hf_text_config"})
    module = getattr(transformers, arch, None)
    name = backend_class(config, text, arch)
    extras.update(backend_class=name, model_class=getattr(module or model_cls, "__name__", None))
    return Verdict(True, name, extras)


def attention_backend_gate(config, model_cls: type | None = None) -> Verdict:
    """TransformersBase.__init__ (transformers.py:607-630): the class `architectures[0]` names in
    transformers, else `auto_map`'s AutoModel or AutoModelForCausalLM (`model_cls`, loaded by
    the auditor for remote code; transformers.py:116-138), must not set
    `_supports_attention_backend = False`."""
    import transformers

    found = getattr(transformers, (getattr(config, "architectures", None) or [""])[0], None)
    auto_map = getattr(config, "auto_map", None) or {}
    if found is None and any(key in auto_map for key in ("AutoModel", "AutoModelForCausalLM")):
        found = model_cls
    if found is not None and not getattr(found, "_supports_attention_backend", True):
        return Verdict(False, f"ValueError: Model {found} does not support custom attention backends "
                              "(_supports_attention_backend=False). The Transformers backend requires custom "
                              "attention support.", {"model_class": found.__name__})
    return Verdict(True, "supports custom attention backends",
                   {"model_class": getattr(found, "__name__", None)})


def embeddings_gate(model, text) -> Verdict:
    """TransformersBase.__init__ after the build (transformers.py:632-644): `vocab_size` is read
    with `get_input_embeddings().num_embeddings` as getattr's default, which Python evaluates
    first whatever the config has; `num_hidden_layers` with a default of 0."""
    with engine_line(RELEASE.engine, cited(RELEASE, "vocab_size")):
        vocab_size = getattr(text, "vocab_size", model.get_input_embeddings().num_embeddings)
    layers = getattr(text, "num_hidden_layers", 0)
    return Verdict(True, f"vocab {vocab_size}, {layers} layers", {"vocab_size": vocab_size, "layers": layers})


@transcribed(RELEASE, "can_enable_torch_compile")
def can_enable_torch_compile(config) -> bool:
    """SGLang's can_enable_torch_compile, copied: dynamic rope turns compile off."""
    text = getattr(config, "text_config", config)
    rope_scaling = getattr(text, "rope_scaling", None)
    if isinstance(rope_scaling, dict):
        if rope_scaling.get("rope_type", rope_scaling.get("type", "")) == "dynamic":
            return False
    rope_params = getattr(text, "rope_parameters", None)
    if isinstance(rope_params, dict):
        if isinstance(next(iter(rope_params.values()), None), dict):
            return not any(rp.get("rope_type") == "dynamic" for rp in rope_params.values())
        if rope_params.get("rope_type") == "dynamic":
            return False
    return True


def compile_gate(config, enabled=can_enable_torch_compile) -> Verdict:
    """`_compile_compatible = can_enable_torch_compile(config)` (transformers.py:662): the last step
    of TransformersBase.__init__; it stops nothing, it turns compile off. `enabled`: the function
    that answers (SGLang's own in the own-code variant)."""
    on = bool(enabled(config))
    return Verdict(True, "compile enabled" if on else "compile disabled (dynamic rope)", {"compile_enabled": on})
