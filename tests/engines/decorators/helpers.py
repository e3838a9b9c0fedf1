"""Shared helpers: build a class under a decorator and name the outcome."""

import importlib.util

import pytest

from auditor.core.classifier import Phase, classify
from auditor.engines.vllm.decorators import decorated, get_policy

from . import vllm_like

BUILD = "build"
EXTERNAL = f"external:{vllm_like.__name__}:support_torch_compile"
OWN_POLICIES = ("legacy", "fixed", "fixed-no-config-skip")


def classify_failure(exc, decorator):
    """The status of a failed decoration or build under `decorator`, as the auditor judges it."""
    return classify(exc, Phase.DECORATED, decorator_files=decorator.source_files()).status


def snapshot_matches(snapshot):
    """Whether the snapshot's class is as it was: same bases, same attribute objects."""
    now = snapshot.cls.__dict__
    return (snapshot.cls.__bases__ == snapshot.bases and now.keys() == snapshot.attributes.keys()
            and all(now[key] is value for key, value in snapshot.attributes.items()))


def outcome(cls, policy, *args, dims=None, **kwargs):
    """"build", or the classified failure of decorating `cls` and calling `cls(*args, **kwargs)`."""
    decorator = get_policy(policy)
    try:
        with decorated(cls, decorator, dims) as decorated_cls:
            decorated_cls(*args, **kwargs)
    except Exception as exc:
        return classify_failure(exc, decorator)
    return BUILD


def failure(cls, policy, *args, dims=None, **kwargs):
    """The exception building `cls` under `policy` raised (the test fails if none)."""
    with decorated(cls, policy, dims) as decorated_cls:
        try:
            decorated_cls(*args, **kwargs)
        except Exception as exc:
            return exc
    raise AssertionError(f"{cls.__name__} built under {policy}")

HAS_VLLM = importlib.util.find_spec("vllm") is not None
# vLLM's real decorator, through the adapter; its tests run only where vllm is installed.
VLLM = pytest.param("vllm", marks=pytest.mark.skipif(not HAS_VLLM, reason="vllm is not installed"))
