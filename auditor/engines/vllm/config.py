"""vLLM's own config classes: the model types whose config class vLLM replaces with its own
(`_CONFIG_REGISTRY` of vllm/transformers_utils/config.py). `config_class` needs vLLM; the
emulation's stand-in (`as_vllm_reads`) does not."""

from __future__ import annotations

from dataclasses import dataclass, field


def config_class(model_type: str) -> type | None:
    """vLLM's own config class for `model_type`, or None when vLLM uses transformers' class."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    if model_type not in dict.keys(_CONFIG_REGISTRY):
        return None
    cls = _CONFIG_REGISTRY[model_type]
    try:
        own = CONFIG_MAPPING[model_type]
    except KeyError:
        own = None
    return None if cls is own else cls


# transformers_utils/config.py:122-175: the config classes of vLLM's own (vllm/transformers_utils/
# configs/, not transformers') for model types of transformers' mapping, in any release the
# emulation has a record of, and what of each class model code building from it can meet beyond
# config.json's fields: its name, its `attribute_map` and its parallel plans. Which types a release
# reads with them is its record's `own_config_types` (releases.py); both are checked against the
# installed vLLM's classes in tests/engines/test_vllm_constructor.py.
@dataclass(frozen=True)
class OwnConfigClass:
    name: str
    aliases: dict[str, str] = field(default_factory=dict)
    tp_plan: dict[str, str] | None = None
    pp_plan: dict[str, tuple[list[str], list[str]]] | None = None


OWN_CONFIG_CLASSES: dict[str, OwnConfigClass] = {
    "hy_v4": OwnConfigClass(  # configs/hy_v4.py:60-83
        "HYV4Config", {"num_local_experts": "n_routed_experts"},
        tp_plan={
            "layers.*.self_attn.q_b_proj": "colwise", "layers.*.self_attn.kv_a_proj_with_mqa": "mla_kv_a_proj",
            "layers.*.self_attn.kv_b_proj": "colwise", "layers.*.self_attn.o_proj": "rowwise",
            "layers.*.self_attn.linear_gate": "colwise", "layers.*.mlp.experts.gate_up_proj": "packed_colwise",
            "layers.*.mlp.experts.down_proj": "rowwise", "layers.*.mlp.experts": "moe_tp_experts",
            "layers.*.mlp.shared_experts.gate_proj": "colwise", "layers.*.mlp.shared_experts.up_proj": "colwise",
            "layers.*.mlp.shared_experts.down_proj": "rowwise", "layers.*.mlp.gate_proj": "colwise",
            "layers.*.mlp.up_proj": "colwise", "layers.*.mlp.down_proj": "rowwise",
        },
        pp_plan={"embed_tokens": (["input_ids"], ["inputs_embeds"]),
                 "layers": (["hidden_states", "attention_mask"], ["hidden_states"]),
                 "norm": (["hidden_states"], ["hidden_states"])}),
    "inkling_mm_model": OwnConfigClass("InklingMMConfig"),
    "kimi_linear": OwnConfigClass("KimiLinearConfig"),
    "minimax_m3_vl": OwnConfigClass("MiniMaxM3Config"),
    "qwen3_asr": OwnConfigClass("Qwen3ASRConfig"),
}


def as_vllm_reads(config, model_type: str):
    """`config` as vLLM hands it to `AutoModel.from_config`, without vLLM: for a model type the
    followed release reads with a class of its own (its `own_config_types`, OWN_CONFIG_CLASSES), a config of a stand-in class with that
    class's name, aliases and plans, made from config.json's fields (vLLM's class keeps every
    field it does not name, as PreTrainedConfig does). What transformers' class adds beyond its
    fields (its own aliases: kimi_linear's `num_local_experts`) is gone, as it is in vLLM. A
    composite config (sub-configs) is kept: vLLM's composite classes make their own sub-configs,
    which a flat stand-in cannot. Any other config is returned as it is."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    from auditor.engines.vllm.releases import followed

    own = OWN_CONFIG_CLASSES.get(model_type) if model_type in followed().own_config_types else None
    if own is None or getattr(config, "sub_configs", None):
        return config
    stand_in = type(own.name, (PreTrainedConfig,), {
        "model_type": model_type, "attribute_map": dict(own.aliases), "__module__": __name__,
        "base_model_tp_plan": own.tp_plan, "base_model_pp_plan": own.pp_plan})
    return stand_in.from_dict(config.to_dict())
