"""A real transformers model: LlamaModel decorated as vLLM's Transformers backend does."""

import pytest
import torch
from transformers import LlamaForCausalLM, LlamaModel

from auditor.engines.vllm.decorators import decorated
from auditor.models.components import DECODER_DIMS as TRANSFORMERS_DYNAMIC_ARG_DIMS

from .helpers import EXTERNAL, OWN_POLICIES, VLLM


@pytest.mark.parametrize("policy", [*OWN_POLICIES, EXTERNAL, VLLM])
def test_llama_builds_on_meta_and_is_restored(policy, llama_config):
    before = dict(LlamaModel.__dict__), LlamaModel.__bases__, LlamaModel.__mro__
    with decorated(LlamaModel, policy, TRANSFORMERS_DYNAMIC_ARG_DIMS) as cls, torch.device("meta"):
        model = cls(llama_config)
        causal = LlamaForCausalLM(llama_config)
    assert type(model) is LlamaModel
    assert model.embed_tokens.weight.is_meta
    # The decorated class is the one transformers itself builds through its module-level name:
    # every decorator's wrapper __init__ sets `vllm_config`.
    assert type(causal.model) is LlamaModel
    assert hasattr(causal.model, "vllm_config")
    after = dict(LlamaModel.__dict__), LlamaModel.__bases__, LlamaModel.__mro__
    assert after[0].keys() == before[0].keys()
    assert all(after[0][k] is v for k, v in before[0].items())
    assert after[1:] == before[1:]
