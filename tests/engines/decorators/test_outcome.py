"""Classification of refused / check-error / error from real tracebacks."""

import traceback
from pathlib import Path

import pytest
import torch

import auditor.engines.vllm.decorators.policies as legacy_module
from auditor.core.classifier import is_refusal
from auditor.core.status import Status
from auditor.engines.vllm.decorators import get_policy

from . import vllm_like
from .helpers import EXTERNAL, classify_failure, failure
from .models import Block, Block3, Failing, TypingCallableBlock

CHECK_ERROR, ERROR, REFUSED = Status.CHECK_ERROR, Status.ERROR, Status.REFUSED


def innermost_file(exc):
    return Path(traceback.extract_tb(exc.__traceback__)[-1].filename)


def test_refused():
    exc = failure(Block, "legacy", 8, "gelu")
    assert is_refusal(exc)
    assert classify_failure(exc, get_policy("legacy")) == REFUSED


def test_check_error_raised_in_the_policy_frame():
    exc = failure(Block3, "legacy", torch.relu, torch.tanh)
    assert innermost_file(exc) == Path(legacy_module.__file__)
    assert not is_refusal(exc)
    assert classify_failure(exc, get_policy("legacy")) == CHECK_ERROR


def test_check_error_through_typing_frames():
    exc = failure(TypingCallableBlock, "legacy", torch.relu, torch.tanh)
    assert innermost_file(exc).name == "typing.py"  # skipped as standard library
    assert classify_failure(exc, get_policy("legacy")) == CHECK_ERROR


def test_check_error_in_an_external_decorator():
    exc = failure(Block3, EXTERNAL, torch.relu, torch.tanh)
    assert innermost_file(exc) == Path(vllm_like.__file__)
    assert classify_failure(exc, get_policy(EXTERNAL)) == CHECK_ERROR
    # The same exception is not the project decorator's own code.
    assert classify_failure(exc, get_policy("legacy")) == ERROR


@pytest.mark.parametrize("policy", ["legacy", "fixed", EXTERNAL])
def test_model_errors(policy):
    exc = failure(Failing, policy, 3)
    assert classify_failure(exc, get_policy(policy)) == ERROR


def test_model_type_error_inside_torch_is_an_error():
    exc = failure(Block, "legacy", "8")  # nn.Linear("8", "8")
    assert type(exc) is TypeError
    assert classify_failure(exc, get_policy("legacy")) == ERROR


def test_an_exception_never_raised_is_an_error():
    assert classify_failure(ValueError("x"), get_policy("fixed")) == ERROR


def test_is_refusal_wants_the_type_and_the_message():
    assert not is_refusal(TypeError("some other type error"))
    assert not is_refusal(ValueError(
        "'B.__init__' received a positional argument of type 'int', but no parameter of that type "
        "was found in the method signature."))
