"""SGLang's releases as the emulation copies them: one record each, oldest first.

`citations`: where each step the emulation copies or transcribes (gates.py, modules.py; marked
`@transcribed(RELEASE, step)`) is in that release's wheel, under sglang/. A new release: diff its
wheel against the last record's (srt/models/transformers.py, srt/model_loader/utils.py,
srt/utils/hf_transformers/common.py), copy the record, change what changed, say it in `changes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.engines.interface import EngineRelease


@dataclass(frozen=True, kw_only=True)
class SglangRelease(EngineRelease):
    """`shims`: the environment shims (shims.py) this release's own construction needs where this
    machine lacks what it asks (a machine without a GPU: `sgl-kernel`; every machine: the meta
    device's two); `loader`: file:line of the steps of its own model loader the serves rows name.
    `differs` (the base record's): where SGLang's own construction (serves/sglang) and the emulated
    gates give a type different verdicts, each with its reason."""

    shims: tuple[str, ...] = ()
    loader: tuple[tuple[str, str], ...] = ()


V0_5_23 = SglangRelease(
    version="0.5.23",
    engine="SGLang",
    package="sglang",
    transformers="==5.19.0",
    torch="==2.14.1",
    citations={
        "fallback": "srt/models/transformers.py",
        "selection": "srt/model_loader/utils.py",
        "get_hf_text_config": "srt/utils/hf_transformers/common.py:547-613",
        "get_hf_text_config (dict sub-config)": "srt/utils/hf_transformers/common.py:566-571",
        "_is_moe_model": "srt/model_loader/utils.py:35-69",
        "ModelConfig.is_multimodal": "srt/configs/model_config.py:809-827",
        "_derive_model_shapes": "srt/configs/model_config.py:1341-1350 (run by ModelConfig.__init__, 885)",
        "_get_transformers_backend_arch": "srt/model_loader/utils.py:79-100",
        "can_enable_torch_compile": "srt/models/transformers.py:71-91",
        "_getattr_first": "srt/models/transformers.py:107-113",
        "_get_model_tp_plan": "srt/models/transformers.py:687-745",
        "_normalize_tp_style": "srt/models/transformers.py:228-248",
        "_normalize_tp_plan": "srt/models/transformers.py:747-757",
        "replace_rms_norm_class": "srt/models/transformers.py:251-280",
        "divide": "srt/distributed/utils.py:68-79",
        # the gates, in TransformersBase.__init__'s order (the report names each gate's)
        "resolve_transformers_arch": "srt/model_loader/utils.py:111-195",
        "attention backend": "srt/models/transformers.py:607-630",
        "TransformersBase.__init__": "srt/models/transformers.py:566-662",
        "input embeddings": "srt/models/transformers.py:632-644",
        "pipeline_parallel": "srt/models/transformers.py:804-901",
        "recursive_replace": "srt/models/transformers.py:760-801",
        "_create_attention_instances": "srt/models/transformers.py:904-955",
        "replace_vocab_embed_class": "srt/models/transformers.py:958-990",
        # single lines the emulation copies (`engine_line` blocks)
        "get_hf_text_config: llm_config heads": "srt/utils/hf_transformers/common.py:597",
        "get_hf_text_config: text_config heads": "srt/utils/hf_transformers/common.py:605",
        "vocab_size": "srt/models/transformers.py:632-636",
        "num_attention_heads": "srt/models/transformers.py:906",
        "num_key_value_heads": "srt/models/transformers.py:907",
        "hidden_size": "srt/models/transformers.py:908",
        "head_dim": "srt/models/transformers.py:909",
        "layer_types": "srt/models/transformers.py:911-913",
        "sliding_window": "srt/models/transformers.py:914-916",
        "attention per layer": "srt/models/transformers.py:945-948",
    },
    # SGLang pins both (its metadata): its own venv has them, and the serves rows are built there.
    tested_transformers="5.19.0",
    shims=("sgl-kernel", "meta-device", "dummy-weights"),
    loader=(("server args", "srt/server_args.py:231 (ServerArgs)"),
            ("model config", "srt/configs/model_config.py:924-983 (ModelConfig.from_server_args)"),
            ("registry", "srt/model_loader/utils.py:111-239 (resolve_transformers_arch, get_model_architecture)"),
            ("constructor", "srt/model_loader/loader.py:285-312 (_initialize_model)"),
            ("weights", "srt/model_loader/loader.py:1493-1532 (DummyModelLoader.load_model after the constructor)"),
            ("parallel state", "srt/distributed/bootstrap.py:304-345 (_init_parallel_groups, gloo, one rank)")),
    # Measured with transformers 5.19.0 over every type (BENCHMARKS.md): SGLang's own loader against
    # the emulated gates; the emulation does not copy these.
    differs=(
        ("deepseek_v4", "SGLang reads the config with a config class of its own (srt/utils/hf_transformers/"
                        "common.py:284-320), which transformers' AutoModel does not map: TransformersBase's "
                        "AutoModel.from_config raises; the emulation reads transformers' config"),
        ("kimi_k25", "the same: SGLang's own KimiK25Config (srt/configs/kimi_k25.py), which AutoModel does not map"),
        ("qwen3_asr", "SGLang reads the config with its own class (srt/configs/qwen3_asr.py, in _CONFIG_REGISTRY, "
                      "common.py:117-233), which leaves a sub-config a dict: AutoModel.from_config raises on it"),
        ("zaya", "SGLang reads the config with its own ZayaConfig (srt/configs/zaya.py), on which "
                 "can_enable_torch_compile raises (transformers.py:87, a float where it reads .get): SGLang stops "
                 "at compile-compatible; the emulation reads transformers' config and passes"),
        ("hy_v4", "SGLang reads the config with its own HYV4Config (srt/configs/hy_v4.py), whose plan names no "
                  "'mla_kv_a_proj' style: it serves it; the emulation reads transformers' config and stops at tp-plan"),
        ("gemma4", "SGLang's config loader flattens the per-layer head_dim and num_key_value_heads of the Gemma4 "
                   "family (_apply_gemma4_attention_overrides, srt/utils/hf_transformers/config.py:66-140), so its "
                   "constructor reads them globally and passes; the emulation stops at attention"),
        ("embedding_gemma2", "the same Gemma4-family flattening (config.py:66-140)"),
        ("gemma3n_text", "SGLang registers its own Gemma3nForCausalLM with AutoModel (srt/models/gemma3n_causal.py:"
                         "1016), so TransformersBase builds SGLang's class, whose parameters carry weight attributes "
                         "its init_on_device_without_buffers cannot pass on (transformers.py:178); the emulation "
                         "builds transformers' class"),
        ("gemma3n", "the same registration: its text model is SGLang's Gemma3nForCausalLM"),
        ("ernie4_5_vl_moe", "SGLang's FusedMoE layer divides moe_intermediate_size, a list in this config "
                            "(srt/layers/moe/fused_moe_triton/layer.py:427); the emulation's MoE replacement builds "
                            "no FusedMoE sizes"),
        ("granitemoehybrid", "its default config written as config.json and read back, as SGLang reads a "
                             "checkpoint, lacks layers_block_type under transformers 5.19.0, and the model's own "
                             "__init__ raises; the emulation builds from the config in memory"),
    ),
)

RELEASES: tuple[EngineRelease, ...] = (V0_5_23,)
RELEASE = RELEASES[-1]  # every gate and message here cites it (its one record)
