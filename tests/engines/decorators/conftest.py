import pytest
from transformers import LlamaConfig

import auditor.engines  # noqa: F401  (registers the engines' decorator policies: vllm)


@pytest.fixture
def llama_config():
    return LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                       num_key_value_heads=2, vocab_size=32)
