"""vLLM's releases as the emulation copies them: one record each, oldest first.

What the emulated gates take from a release's source (gates.py, meeting.py) is here, each with
where it was read (`citations`, file:lines in that release's wheel, under vllm/); the gates read
the record the installed release picks, or the newest where vLLM is not installed
(`auditor.engines.interface.pick_release`). `tests/engines/test_vllm_releases.py` holds the
installed release's record to vLLM's own tables. A new release: diff its wheel against the last
record's (the backend, model_executor/models/transformers/; its registry; config/model.py's
suffix table; compilation/decorators.py), copy the record, change what changed, say it in
`changes`, then run `auditor agree` on a sweep under it: its list is the port's to-do.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from auditor.engines.interface import EngineRelease, pick_release
from auditor.engines.interface import installed_version as _installed


@dataclass(frozen=True, kw_only=True)
class VllmRelease(EngineRelease):
    """`backend_classes`: the Transformers backend's classes vLLM's registry has;
    `suffixes`: ModelConfig's `_SUFFIX_TO_DEFAULTS` (suffix -> (runner, task)), in order, the first
    suffix an architecture ends with deciding; `num_experts`: CONFIG_FIELD_ALIASES["num_experts"];
    `floors`: feature -> the transformers release `Base.check_version` asks of it (features that
    apply to some models only: a row each, `version:<feature>`, which stops nothing);
    `model_floors`: model type -> (floor, feature) the backend's own class checks at __init__,
    which stops the type (0.34.0: Aria's MoE)."""

    backend_classes: frozenset[str]
    suffixes: tuple[tuple[str, tuple[str, str]], ...]
    num_experts: tuple[str, ...]
    floors: tuple[tuple[str, str], ...]
    model_floors: tuple[tuple[str, str, str], ...] = ()
    backend_native: tuple[str, ...] = ()  # architectures the registry sends to the backend, native or not
    # The model types of transformers' mapping whose config this release reads with a class of its
    # own (transformers_utils/config.py's _CONFIG_REGISTRY; the classes themselves: config.py)
    own_config_types: tuple[str, ...] = ()
    # The environment shims (shims.py) this release's own code needs where this machine lacks
    # what it asks: "triton-cpu" from 0.34.0 (platforms/cpu.py refuses an x86 CPU without it);
    # "moe-prepack" and "activation-ops" for kernels of the CPU wheel the CUDA wheel lacks.
    shims: tuple[str, ...] = ()

    def floor(self, feature: str) -> str:
        return dict(self.floors)[feature]

    def model_floor(self, model_type: str) -> tuple[str, str] | None:
        return next(((floor, feature) for kind, floor, feature in self.model_floors if kind == model_type), None)


_BACKEND_CLASSES = frozenset({
    "TransformersForCausalLM", "TransformersMoEForCausalLM", "TransformersForMTP", "TransformersMoEForMTP",
    "TransformersMultiModalForCausalLM", "TransformersMultiModalMoEForCausalLM",
    "TransformersEmbeddingModel", "TransformersMoEEmbeddingModel", "TransformersMultiModalEmbeddingModel",
    "TransformersForSequenceClassification", "TransformersMoEForSequenceClassification",
    "TransformersMultiModalForSequenceClassification",
})
_SUFFIXES = (
    ("ForCausalLM", ("generate", "none")), ("ForConditionalGeneration", ("generate", "none")),
    ("ChatModel", ("generate", "none")), ("LMHeadModel", ("generate", "none")),
    ("ForTextEncoding", ("pooling", "embed")), ("EmbeddingModel", ("pooling", "embed")),
    ("ForSequenceClassification", ("pooling", "classify")), ("ForTokenClassification", ("pooling", "classify")),
    ("ForAudioClassification", ("pooling", "classify")), ("ForImageClassification", ("pooling", "classify")),
    ("ForVideoClassification", ("pooling", "classify")), ("ClassificationModel", ("pooling", "classify")),
    ("ForRewardModeling", ("pooling", "embed")), ("RewardModel", ("pooling", "embed")),
    ("Model", ("pooling", "embed")),
)
_NUM_EXPERTS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")

V0_33_0 = VllmRelease(
    version="0.33.0",
    engine="vLLM",
    package="vllm",
    transformers="<5.21.0,>=5.16.1",
    torch="==2.14.0",
    backend_classes=_BACKEND_CLASSES,
    suffixes=_SUFFIXES,
    num_experts=_NUM_EXPERTS,
    floors=(("video inputs", "5.18.0"), ("MTP", "5.20.0")),
    own_config_types=("hy_v4", "inkling_mm_model", "kimi_linear", "minimax_m3_vl", "qwen3_asr"),
    citations={
        "backend classes": "model_executor/models/registry.py:784-830",
        "suffixes": "config/model.py:2340-2357",
        "backend class": "config/model.py:1129-1157",
        "num_experts": "transformers_utils/config.py:56-70",
        "per-layer read": "transformers_utils/config.py:1264",
        "Base.__init__": "model_executor/models/transformers/base.py:123-202",
        "encoder-only": "model_executor/models/transformers/base.py:715-718 (config != config.get_text_config())",
        "check_version": "model_executor/models/transformers/base.py:836-842",
        "floor: video inputs": "model_executor/models/transformers/multimodal.py:116",
        "floor: MTP": "model_executor/models/transformers/mtp.py:50",
        "decorator": "compilation/decorators.py",
        "getattr_iter": "config/utils.py:132-160",
        "registry": "model_executor/models/registry.py:1285-1361 (_try_resolve_transformers)",
        "decorate": "model_executor/models/transformers/base.py:295-308 (compilation/decorators.py:208-243)",
        "can_enable_torch_compile": "model_executor/models/transformers/utils.py:373-386",
        "Base.pipeline_parallel": "model_executor/models/transformers/base.py:386-425",
        "Base.recursive_replace": "model_executor/models/transformers/base.py:491-597",
        "is_multimodal": "config/model.py:1134 (hf_config is not hf_text_config: transformers_utils/config.py:1258-1272)",
        "get_num_experts": "transformers_utils/model_arch_config_convertor.py:159-190",
        "interface lookup": "model_executor/models/transformers/fusers/attention.py:27-36",
        "interface_call": "model_executor/models/transformers/fusers/attention.py:39-65",
        "fuser keyword": "model_executor/models/transformers/fusers/attention.py:103-106",
        "fuser resolve": "model_executor/models/transformers/fusers/attention.py:68-78",
        "AttentionFuser.scale": "model_executor/models/transformers/fusers/attention.py:138-149",
        "AttentionFuser.sinks": "model_executor/models/transformers/fusers/attention.py:151-162",
        "Base._vocab_embeddings": "model_executor/models/transformers/base.py:453-476",
        "Base._vocab_embeddings sizes": "model_executor/models/transformers/base.py:456-463",
        "replace_linear_class style": "model_executor/models/transformers/utils.py:128-129",
        "_iter_rope_parameters": "transformers_utils/config.py:690-699 (is_rope_parameters_nested: 222-230)",
        "resolve_auto_dtype": "config/model.py:2423-2464 (_FLOAT16_NOT_SUPPORTED_MODELS: 2398-2403)",
        "get_torch_dtype": "transformers_utils/model_arch_config_convertor.py:201-239",
        "supported_dtypes: cuda": "platforms/cuda.py:257-266",
        "supported_dtypes: cpu": "platforms/cpu.py:117-137",
        "wrapper": "compilation/wrapper.py (TorchCompileWithNoGuardsWrapper)",
    },
)

V0_34_0 = VllmRelease(
    version="0.34.0",
    engine="vLLM",
    package="vllm",
    transformers="<5.23.0,>=5.16.1",
    torch="==2.14.0",
    backend_classes=_BACKEND_CLASSES,
    suffixes=_SUFFIXES,
    num_experts=_NUM_EXPERTS,
    floors=V0_33_0.floors,
    model_floors=(("aria", "5.18.0", "Aria"),),
    backend_native=("GemmaForCausalLM", "OlmoeForCausalLM", "StableLmForCausalLM"),
    own_config_types=("hy_v4", "inkling_mm_model", "kimi_linear"),
    shims=("triton-cpu", "moe-prepack", "activation-ops"),
    tested_transformers="5.18.0",
    citations={
        **V0_33_0.citations,
        "backend classes": "model_executor/models/registry.py:826-872",
        "suffixes": "config/model.py:2384-2401",
        "backend class": "config/model.py:1149-1177",
        "num_experts": "transformers_utils/config.py:57-71",
        "per-layer read": "transformers_utils/config.py:1309",
        "encoder-only": "model_executor/models/transformers/base.py:715-716 (model_config.is_multimodal_model)",
        "check_version": "model_executor/models/transformers/base.py:834-840",
        "floor: Aria": "model_executor/models/transformers/moe.py:217-218",
        "backend native": "model_executor/models/registry.py:782-825 (_TRANSFORMERS_SUPPORTED_MODELS)",
        "shim: triton-cpu": "platforms/cpu.py:242 (VllmConfig refuses an x86 CPU without Triton for CPUs)",
        "shim: moe-prepack": "_cpu_ops.py:1530-1536 (cpu_prepack_moe_weight; called by "
                             "model_executor/layers/fused_moe/experts/cpu_moe.py:269-279, process_weights_after_loading)",
        "shim: activation-ops": "model_executor/layers/activation.py:559-566, 592-599, 624-632 (NewGELU, FastGELU, "
                                "QuickGELU take torch.ops._C.gelu_* in __init__ on a CPU; forward_cpu calls it on "
                                "POWERPC only: 581-584, 613-616, 646-649)",
        "kernels": "platforms/cpu.py:663-699 (import_kernels: vllm._C, which the CUDA wheel does not ship)",
        "resolve_auto_dtype": "config/model.py:2467-2508 (_FLOAT16_NOT_SUPPORTED_MODELS: 2442-2447)",
        "supported_dtypes: cuda": "platforms/cuda.py:298-307",
    },
    changes=(
        "transformers requirement <5.21.0 -> <5.23.0",
        "base.py:715: an encoder layer in a model makes it encoder-only unless ModelConfig.is_multimodal_model "
        "(was: unless config != config.get_text_config()); the emulation does not choose the attention class",
        "moe.py:217-218: MoEMixin.__init__ asks transformers >= 5.18.0 of aria (the build row)",
        "layers.py: RMSNorm and GemmaRMSNorm resolve through hw_agnostic.resolve (same classes by default)",
        "registry.py: GemmaForCausalLM, OlmoeForCausalLM and StableLmForCausalLM go to the Transformers backend "
        "(the native column; the backend-only rows are the same)",
        "transformers_utils/config.py: _CONFIG_REGISTRY no longer has minimax_m3_vl and qwen3_asr "
        "(transformers' own classes read them)",
        "compilation/decorators.py: the compile cache's code factors (get_code_factors) replace its hash; "
        "traced files are Paths (the decorator's signature check is unchanged)",
    ),
    # `auditor agree RUN --policies fixed,vllm` over every type of transformers 5.18.0 in this release's
    # venv (2026-12-05): 416 types vLLM built through its Transformers backend compared, these 4 differ.
    differs=(
        ("aria", "the emulated gates are given the swept class's architecture (AriaModel), which vLLM's "
                 "registry sends to a multi-modal MoE embedding class it does not have (model_executor/models/"
                 "registry.py:826-872); vLLM's own construction is given a checkpoint's architecture "
                 "(AriaForConditionalGeneration), which its Transformers backend serves"),
        ("instructblipvideo", "vLLM's multi-modal Transformers backend asks the processor for an image, video or "
                              "audio processor (model_executor/models/transformers/multimodal.py:145-157) and "
                              "InstructBlipVideoProcessor exposes none of them; the emulation reads no processor"),
        ("kimi_k25", "as aria: the swept Kimi_K25Model has no multi-modal MoE embedding class in vLLM, a "
                     "checkpoint's Kimi_K25ForConditionalGeneration is served by the Transformers backend"),
        ("t5gemma2", "vLLM's compile decorator checks the positional arguments of a decorated __init__ against "
                     "the annotations of its parameters, `self` included (compilation/decorators.py:385-397), so "
                     "each argument meets the annotation of the parameter before it: T5Gemma2Decoder(config, "
                     "eoi_token_index) meets `config: T5Gemma2DecoderConfig` with an int and raises TypeError. "
                     "The emulated decorate gate does not copy this check of the wrapped __init__"),
    ),
)

RELEASES: tuple[VllmRelease, ...] = (V0_33_0, V0_34_0)


def installed_version() -> str | None:
    """vLLM's installed version (without importing it), or None."""
    return _installed("vllm")


@functools.cache
def followed() -> VllmRelease:
    """The record the emulation follows in this process (see the module's docstring)."""
    return pick_release(RELEASES, installed_version())
