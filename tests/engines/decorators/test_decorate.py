"""Decoration-time validation, the wrapper __init__, and the project decorator's options."""

import pytest
import torch
from transformers import LlamaModel, SiglipVisionModel

from auditor.engines.vllm.decorators import (
    DecorateError,
    decorate,
    decorated,
    get_policy,
    support_torch_compile,
)
from auditor.engines.vllm.decorators.support import CompileSupport
from auditor.models.components import DECODER_DIMS as TRANSFORMERS_DYNAMIC_ARG_DIMS

from .helpers import EXTERNAL, OWN_POLICIES, classify_failure
from .models import Block, Inferred, NoForward, NoTensors, Vision, WithKeywords


def decorate_error(cls, policy, dims=None):
    """The DecorateError `decorated` raises; the class must come back untouched."""
    before = dict(cls.__dict__)
    with pytest.raises(DecorateError) as info, decorated(cls, policy, dims):
        pass
    assert dict(cls.__dict__) == before
    assert classify_failure(info.value, get_policy(policy)) == "decorate-error"
    return info.value.original


@pytest.mark.parametrize("policy", OWN_POLICIES)
def test_no_forward(policy):
    original = decorate_error(NoForward, policy, {"x": 0})
    assert type(original) is TypeError
    assert str(original) == "decorated class should have a forward method."


@pytest.mark.parametrize("policy", OWN_POLICIES)
def test_no_tensor_annotations_to_infer_from(policy):
    original = decorate_error(NoTensors, policy)
    assert type(original) is ValueError
    assert str(original) == (
        f"No dynamic dimensions found in the forward method of {NoTensors}. "
        "Please provide dynamic_arg_dims explicitly."
    )
    assert str(original).startswith("No dynamic dimensions found in the forward method of <class '")


@pytest.mark.parametrize("policy", OWN_POLICIES)
def test_explicit_empty_dims_are_no_dims(policy):
    assert type(decorate_error(Vision, policy, {})) is ValueError


@pytest.mark.parametrize("policy", [*OWN_POLICIES, EXTERNAL])
def test_dim_argument_forward_lacks(policy):
    original = decorate_error(Vision, policy, {"input_ids": 1})
    assert type(original) is ValueError
    assert str(original) == f"Argument input_ids not found in the forward method of {Vision}"


def test_transformers_dims_on_a_real_vision_model():
    original = decorate_error(SiglipVisionModel, "fixed", TRANSFORMERS_DYNAMIC_ARG_DIMS)
    assert str(original) == f"Argument input_ids not found in the forward method of {SiglipVisionModel}"


def test_bare_decorator_validates_like_vllm():
    with pytest.raises(TypeError, match="^decorated class should have a forward method.$"):
        support_torch_compile(NoForward)


def test_inferred_dims_are_tensor_arguments_at_dim_0():
    with decorated(Inferred, "legacy") as cls:
        module = cls()
    assert module.compile_settings.dynamic_arg_dims == {"x": 0, "y": 0, "z": 0}


def test_inference_on_llama_picks_attention_mask_not_input_ids(llama_config):
    # input_ids is annotated LongTensor, which vLLM's inference list lacks.
    with decorated(LlamaModel, "legacy") as cls, torch.device("meta"):
        module = cls(llama_config)
    assert module.compile_settings.dynamic_arg_dims == {"attention_mask": 0, "inputs_embeds": 0}


def test_keywords_are_forwarded_to_an_init_that_names_them():
    config = object()
    with decorated(WithKeywords, "legacy") as cls:
        module = cls(4, vllm_config=config, prefix="model.layers.0")
        default = cls(4)
    assert module.received == {"vllm_config": config, "prefix": "model.layers.0"}
    assert module.vllm_config is config
    # As in vLLM, the wrapper's own default ("") replaces the model's default.
    assert default.received == {"vllm_config": None, "prefix": ""}


def test_keywords_are_swallowed_for_an_init_that_does_not_name_them():
    config = object()
    with decorated(Block, "fixed") as cls:
        module = cls(dim=8, vllm_config=config, prefix="p")
    assert module.vllm_config is config
    assert module.act == "silu"


def test_call_runs_forward_directly_like_vllm():
    calls = []
    with decorated(WithKeywords, "legacy") as cls:
        module = cls(4)
        module.register_forward_hook(lambda *_: calls.append("hook"))
        out = module(torch.ones(2))
    assert torch.equal(out, torch.full((2,), 2.0))
    assert calls == []  # vLLM's __call__ bypasses nn.Module.__call__ and its hooks


def test_decorating_twice_is_a_no_op():
    with decorated(Block, "legacy") as cls:
        init = cls.__dict__["__init__"]
        support_torch_compile(cls, policy="fixed")
        assert cls.__dict__["__init__"] is init
        assert cls.__bases__.count(CompileSupport) == 1


def test_unknown_compile_mode_and_policy():
    with pytest.raises(ValueError, match="unknown compile_mode 'max'; valid: none"):
        support_torch_compile(compile_mode="max")
    with pytest.raises(ValueError, match="unknown check policy 'strict'; valid: legacy, fixed"):
        support_torch_compile(policy="strict")


def test_a_decorator_must_decorate_in_place():
    from . import vllm_like

    decorator = get_policy(f"external:{vllm_like.__name__}:copying_decorator")
    with pytest.raises(DecorateError, match="instead of decorating"):
        decorate(Block, decorator, {"x": 0})
