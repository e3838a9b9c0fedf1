"""Exact outcomes of each policy on small modules (real torch and transformers)."""

import pytest
import torch
from transformers import LlamaConfig, Qwen2Config

from auditor.core.status import Status

from .future_models import FutureBlock
from .helpers import BUILD, EXTERNAL, HAS_VLLM, failure, outcome
from .models import AnyBlock, Block, Block3, ConfigBlock, Failing, ListBlock, TypingCallableBlock

CHECK_ERROR, DECORATE_ERROR, ERROR, REFUSED = Status.CHECK_ERROR, Status.DECORATE_ERROR, Status.ERROR, Status.REFUSED

POLICIES = ("legacy", "fixed", "fixed-no-config-skip", EXTERNAL)

# (label, class, args, kwargs, expected outcome per policy in POLICIES order).
# Legacy checks each argument against the annotation *before* it: [self, dim, act].
CASES = [
    ("Block(dim=8, act='gelu')", Block, (), {"dim": 8, "act": "gelu"}, (BUILD, BUILD, BUILD, BUILD)),
    ("Block(8)", Block, (8,), {}, (BUILD, BUILD, BUILD, BUILD)),
    # legacy: 8 meets self's empty annotation, "gelu" meets `dim: int`.
    ("Block(8, 'gelu')", Block, (8, "gelu"), {}, (REFUSED, BUILD, BUILD, REFUSED)),
    # legacy: torch.tanh meets Callable[[Tensor], Tensor] and isinstance raises.
    ("Block3(relu, tanh)", Block3, (torch.relu, torch.tanh), {}, (CHECK_ERROR, BUILD, BUILD, CHECK_ERROR)),
    ("TypingCallableBlock(relu, tanh)", TypingCallableBlock, (torch.relu, torch.tanh), {},
     (CHECK_ERROR, BUILD, BUILD, CHECK_ERROR)),
    ("ListBlock([1], ['a'])", ListBlock, ([1], ["a"]), {}, (CHECK_ERROR, BUILD, BUILD, CHECK_ERROR)),
    ("AnyBlock(1, 2)", AnyBlock, (1, 2), {}, (CHECK_ERROR, BUILD, BUILD, CHECK_ERROR)),
    # String annotations: legacy hands isinstance the string "int".
    ("FutureBlock(8, 'gelu')", FutureBlock, (8, "gelu"), {}, (CHECK_ERROR, BUILD, BUILD, CHECK_ERROR)),
    # legacy lets "8" through (self's slot); nn.Linear then fails in the model.
    ("Block('8')", Block, ("8",), {}, (ERROR, REFUSED, REFUSED, ERROR)),
    ("ConfigBlock(LlamaConfig())", ConfigBlock, (LlamaConfig(),), {}, (BUILD, BUILD, BUILD, BUILD)),
    ("ConfigBlock(Qwen2Config())", ConfigBlock, (Qwen2Config(),), {}, (BUILD, BUILD, REFUSED, BUILD)),
    ("Failing(3)", Failing, (3,), {}, (ERROR, ERROR, ERROR, ERROR)),
]


@pytest.mark.parametrize("policy_index", range(len(POLICIES)), ids=POLICIES)
@pytest.mark.parametrize(("label", "cls", "args", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_outcome(label, cls, args, kwargs, expected, policy_index):
    # Explicit dims: FutureBlock's string annotations would defeat inference (next test).
    assert outcome(cls, POLICIES[policy_index], *args, dims={"x": 0}, **kwargs) == expected[policy_index]


@pytest.mark.skipif(not HAS_VLLM, reason="vllm is not installed")
@pytest.mark.parametrize(("label", "cls", "args", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_vllm_matches_legacy(label, cls, args, kwargs, expected):
    assert outcome(cls, "vllm", *args, dims={"x": 0}, **kwargs) == expected[0]


@pytest.mark.parametrize("policy", ["legacy", "fixed"])
def test_string_annotations_defeat_dim_inference(policy):
    assert outcome(FutureBlock, policy, 8) == DECORATE_ERROR


@pytest.mark.parametrize("policy", ["legacy", EXTERNAL])
def test_legacy_refusal_message_is_vllms(policy):
    exc = failure(Block, policy, 8, "gelu")
    assert type(exc) is TypeError
    assert str(exc) == (
        "'Block.__init__' received a positional argument of type 'str', but no parameter of that "
        "type was found in the method signature. Please either annotate 'Block.__init__' or pass "
        "it as a keyword argument."
    )


def test_fixed_refuses_the_argument_against_its_own_annotation():
    exc = failure(Block, "fixed", "8")
    assert str(exc).startswith("'Block.__init__' received a positional argument of type 'str'")


def test_fixed_refusal_of_config_mismatch_names_the_config():
    exc = failure(ConfigBlock, "fixed-no-config-skip", Qwen2Config())
    assert "of type 'Qwen2Config'" in str(exc)


def test_check_error_is_isinstance_itself():
    exc = failure(Block3, "legacy", torch.relu, torch.tanh)
    assert type(exc) is TypeError
    assert "parameterized generic" in str(exc)
