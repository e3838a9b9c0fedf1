"""Policy names, external specs and the vLLM adapter."""

import pytest

from auditor.engines.vllm.decorators import POLICY_NAMES, Decorator, decorated, get_policy

from . import vllm_like
from .helpers import HAS_VLLM
from .models import Block

MODULE = vllm_like.__name__


@pytest.mark.parametrize("name", ["legacy", "fixed", "fixed-no-config-skip", "vllm",
                                  f"external:{MODULE}:support_torch_compile"])
def test_names_resolve(name):
    decorator = get_policy(name)
    assert isinstance(decorator, Decorator)
    assert decorator.name == name
    assert decorator.source_files()


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError) as info:
        get_policy("strict")
    assert str(info.value) == (
        "unknown policy 'strict'; valid: legacy, fixed, fixed-no-config-skip, vllm, external:MODULE:ATTR"
    )
    assert POLICY_NAMES[-1] == "external:MODULE:ATTR"


@pytest.mark.parametrize("name", ["external:", "external:module_only", "external:a:b:c", "external::x"])
def test_malformed_external(name):
    with pytest.raises(ValueError, match="external:MODULE:ATTR"):
        get_policy(name)


@pytest.mark.parametrize("attr", ["missing", "not_callable"])
def test_external_attribute_must_be_callable(attr):
    with pytest.raises(ValueError, match=f"has no callable '{attr}'"):
        get_policy(f"external:{MODULE}:{attr}")


def test_external_module_must_import():
    with pytest.raises(ModuleNotFoundError):
        get_policy("external:no_such_module_for_auditor:f")


@pytest.mark.skipif(HAS_VLLM, reason="vllm is installed")
def test_vllm_policy_without_vllm_is_a_clear_import_error():
    from auditor.engines.vllm.decorator import VllmUnavailableError

    before = dict(Block.__dict__), Block.__bases__
    with pytest.raises(VllmUnavailableError, match="needs vLLM's own decorator"), decorated(Block, "vllm"):
        pass
    assert (dict(Block.__dict__), Block.__bases__) == before
    assert isinstance(VllmUnavailableError("x"), ImportError)
