"""Shared helpers: build a class under a decorator and name the outcome."""

import importlib.util

import pytest

from auditor.decorators import classify_failure, decorated, get_policy

from . import vllm_like

BUILD = "build"
EXTERNAL = f"external:{vllm_like.__name__}:support_torch_compile"
OWN_POLICIES = ("legacy", "fixed", "fixed-no-config-skip")


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
