"""The no-leak guarantee: after `decorated` exits, the class is exactly as before."""

import pytest

from auditor.engines.vllm.decorators import ClassSnapshot, DecorateError, Decorator, decorated

from .helpers import EXTERNAL, OWN_POLICIES, VLLM, outcome, snapshot_matches
from .models import Block, Block3, Child, Parent

POLICIES = (*OWN_POLICIES, EXTERNAL, VLLM)


def state(cls):
    return dict(cls.__dict__), cls.__bases__, cls.__mro__


def assert_same(cls, before):
    after = state(cls)
    assert after[0].keys() == before[0].keys()
    assert all(after[0][key] is value for key, value in before[0].items())
    assert after[1:] == before[1:]


@pytest.mark.parametrize("policy", POLICIES)
def test_class_is_identical_after_exit(policy):
    before = state(Block)
    with decorated(Block, policy) as cls:
        assert cls is Block
        assert cls.__bases__ != before[1]
        assert cls.__dict__["__init__"] is not before[0]["__init__"]
        assert "__call__" in cls.__dict__
        cls(8)
    assert_same(Block, before)


@pytest.mark.parametrize("policy", POLICIES)
def test_restored_when_the_build_raises(policy):
    before = state(Block)
    with pytest.raises(TypeError), decorated(Block, policy) as cls:
        cls(8, "gelu", 1, 2)
    assert_same(Block, before)


@pytest.mark.parametrize("policy", POLICIES)
def test_subclass_mro_is_restored(policy):
    before = state(Child)
    with decorated(Parent, policy):
        assert Child.__mro__ != before[2]
        assert Child().dim == 4  # a subclass of a decorated class goes through the wrapper
    assert_same(Child, before)


@pytest.mark.parametrize("policy", POLICIES)
def test_same_outcome_in_sequence(policy):
    import torch

    first = [outcome(Block, policy, 8, "gelu"), outcome(Block3, policy, torch.relu, torch.tanh)]
    second = [outcome(Block, policy, 8, "gelu"), outcome(Block3, policy, torch.relu, torch.tanh)]
    assert first == second


def test_nested_decoration_is_a_no_op_and_unwinds():
    before = state(Block)
    with decorated(Block, "fixed"), decorated(Block, "legacy") as cls:
        cls(8, "gelu")  # still the fixed check: the inner decoration did nothing
    assert_same(Block, before)


class HalfwayDecorator(Decorator):
    """Mutates the class, then fails: restore must still undo the mutation."""

    name = "halfway"

    def apply(self, cls, dynamic_arg_dims):
        cls.__bases__ = cls.__bases__ + (Marker,)
        cls.extra = 1
        cls.__init__ = lambda self, *a, **k: None
        raise RuntimeError("gave up")

    def source_files(self):
        return frozenset()


class Marker:
    pass


def test_restored_after_a_failed_decoration():
    before = state(Block)
    with pytest.raises(DecorateError, match="halfway could not decorate Block: RuntimeError: gave up"):
        with decorated(Block, HalfwayDecorator()):
            pass
    assert_same(Block, before)


def test_snapshot_matches():
    snapshot = ClassSnapshot.take(Block)
    with decorated(Block, "legacy"):
        assert not snapshot_matches(snapshot)
    assert snapshot_matches(snapshot)
