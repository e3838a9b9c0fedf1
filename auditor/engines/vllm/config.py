"""vLLM's own config classes: the model types whose config class vLLM replaces with its own
(`_CONFIG_REGISTRY` of vllm/transformers_utils/config.py). Needs vLLM."""

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
