"""vLLM's own config classes: the model types whose config class vLLM replaces with its own
(`_CONFIG_REGISTRY` of vllm/transformers_utils/config.py). `config_class` needs vLLM; the
emulation's stand-in (`as_vllm_reads`) does not."""

from __future__ import annotations


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


# transformers_utils/config.py:122-175: the model types of transformers' mapping whose config
# vLLM 0.33.0 reads with a class of its own (vllm/transformers_utils/configs/, not one of
# transformers'): the class's name and its `attribute_map`, which is all of it that model code
# building from it can meet (checked against vLLM's registry in tests/engines/test_vllm_constructor.py).
OWN_CONFIG_CLASSES: dict[str, tuple[str, dict[str, str]]] = {
    "hy_v4": ("HYV4Config", {"num_local_experts": "n_routed_experts"}),
    "inkling_mm_model": ("InklingMMConfig", {}),
    "kimi_linear": ("KimiLinearConfig", {}),
    "minimax_m3_vl": ("MiniMaxM3Config", {}),
    "qwen3_asr": ("Qwen3ASRConfig", {}),
}


def as_vllm_reads(config, model_type: str):
    """`config` as vLLM hands it to `AutoModel.from_config`, without vLLM: for a model type vLLM
    reads with a class of its own (OWN_CONFIG_CLASSES), a config of a stand-in class of that
    name and aliases, made from config.json's fields (vLLM's class keeps every field it does not
    name, as PreTrainedConfig does). What transformers' class adds beyond its fields (its own
    aliases: kimi_linear's `num_local_experts`) is gone, as it is in vLLM. A composite config
    (sub-configs) is kept: vLLM's composite classes make their own sub-configs, which a flat
    stand-in cannot. Any other config is returned as it is."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    own = OWN_CONFIG_CLASSES.get(model_type)
    if own is None or getattr(config, "sub_configs", None):
        return config
    name, aliases = own
    stand_in = type(name, (PreTrainedConfig,), {"model_type": model_type, "attribute_map": dict(aliases),
                                                "__module__": __name__})
    return stand_in.from_dict(config.to_dict())
