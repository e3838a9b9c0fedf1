"""`--dtype auto`: the dtype vLLM runs a model in (auditor.engines.vllm.dtype, transcribed from the
followed release). Where vLLM is installed (its venv), the transcription is held to vLLM's own
`_resolve_auto_dtype`, `get_torch_dtype` and `_FLOAT16_NOT_SUPPORTED_MODELS` over every model
type's default config: a port that forgot a change fails here."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from transformers import AutoConfig, LlamaConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from auditor import engines
from auditor.engines.vllm import dtype as vllm_dtype
from auditor.engines.vllm import releases

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_a_default_config_is_float32_and_downcast_as_vllm_does():
    # A base model (LlamaModel: the suffix table's "Model", a pooling runner) prefers float16;
    # gemma3_text never gets float16 (_FLOAT16_NOT_SUPPORTED_MODELS): the platform's first, bfloat16.
    assert vllm_dtype.auto_dtype("llama", LlamaConfig(), "cpu")[0] == "float16"
    assert vllm_dtype.auto_dtype("gemma3_text", AutoConfig.for_model("gemma3_text"), "cpu")[0] == "bfloat16"
    # A generating architecture takes the platform's first supported dtype.
    causal = LlamaConfig(architectures=["LlamaForCausalLM"])
    assert vllm_dtype.auto_dtype("llama", causal, "cpu")[0] == "bfloat16"
    # The config's own dtype stands where the platform supports it.
    assert vllm_dtype.auto_dtype("llama", LlamaConfig(architectures=["LlamaForCausalLM"], dtype="float16"),
                                 "cpu")[0] == "float16"


def test_the_rule_names_the_release_and_its_lines():
    name, where = vllm_dtype.auto_dtype("llama", LlamaConfig(), "cpu")
    release = releases.followed()
    assert where.startswith(f"vLLM {release.version} vllm/config/model.py:")
    assert release.citations["resolve_auto_dtype"] in where and "platforms/cpu.py" in where


def test_cuda_by_compute_capability():
    # platforms/cuda.py: bfloat16 from Ampere (8.0), float16 from Pascal (6.0).
    assert vllm_dtype._cuda_supported_dtypes((9, 0))[0] == torch.bfloat16
    assert vllm_dtype._cuda_supported_dtypes((7, 5)) == [torch.float16, torch.float32]
    assert vllm_dtype._cuda_supported_dtypes((5, 2)) == [torch.float32]
    turing = vllm_dtype._cuda_supported_dtypes((7, 5))
    # bfloat16 in the config on a GPU without it: vLLM falls back to its preferred dtype.
    assert vllm_dtype._resolve_auto_dtype("llama", torch.bfloat16, is_pooling_model=False,
                                          supported=turing) == torch.float16


def test_a_given_dtype_is_taken_as_it_is_and_auto_follows_the_semantics_engine():
    assert engines.model_dtype("bfloat16", "vllm", "llama", LlamaConfig(), "cpu") == ("bfloat16", "")
    # `plain` semantics has no engine: auto follows the first engine's rule.
    assert engines.model_dtype("auto", "plain", "llama", LlamaConfig(), "cpu") == \
        vllm_dtype.auto_dtype("llama", LlamaConfig(), "cpu")


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (its venv runs this: tests/engines/VLLM_TESTS)")
def test_the_transcription_agrees_with_vllms_own_code_over_every_type(tmp_path):
    from vllm.config import model as vllm_model
    from vllm.platforms import current_platform
    from vllm.transformers_utils.model_arch_config_convertor import ModelArchConfigConvertorBase

    assert vllm_dtype._FLOAT16_NOT_SUPPORTED_MODELS == vllm_model._FLOAT16_NOT_SUPPORTED_MODELS
    supported = list(current_platform.supported_dtypes)
    assert supported == vllm_dtype.supported_dtypes("cpu")
    differ, compared = [], 0
    for model_type in sorted(CONFIG_MAPPING_NAMES):
        try:
            config = AutoConfig.for_model(model_type)
        except Exception:  # a config that cannot be made is the build check's row, not this rule's
            continue
        # An empty local folder as the model: no safetensors metadata to read, as for a default config.
        own_config_dtype = ModelArchConfigConvertorBase.get_torch_dtype(config, str(tmp_path), None, "hf")
        assert own_config_dtype == vllm_dtype.config_dtype(config), model_type
        for pooling in (False, True):
            own = vllm_model._resolve_auto_dtype(model_type, own_config_dtype, is_pooling_model=pooling)
            ours = vllm_dtype._resolve_auto_dtype(model_type, own_config_dtype, is_pooling_model=pooling,
                                                  supported=supported)
            compared += 1
            if own != ours:
                differ.append((model_type, pooling, own, ours))
    assert compared > 500 and not differ
