"""The engines' registry and vLLM's declaration: what the backend check and the policy names
read from it."""

import contextlib

import pytest

from auditor import engines
from auditor.core.classifier import auditor_bug_at
from auditor.core.hints import install_hint
from auditor.engines.vllm.decorators import get_policy, policy_names


def test_vllm_is_registered_with_its_gates_in_vllms_order():
    vllm = engines.get("vllm")
    assert engines.names() == ("vllm", "sglang") and engines.all() == (vllm, engines.get("sglang"))
    assert vllm.gate_names == ("registry", "build", "decorate", "enable-if", "pp-plan", "tp-plan", "attention",
                               "version:video", "version:mtp")
    assert vllm.stopping == {"registry", "build", "decorate", "enable-if", "tp-plan", "attention"}
    assert vllm.not_reached("registry") == "not reached: vLLM stops at backend/registry"
    assert vllm.install_hint == install_hint("vllm") and vllm.install_hint.endswith("[vllm]'")
    assert vllm.version == "emulated" or not vllm.version[0].isalpha()
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        engines.get("tgi")


def test_the_engines_policy_selects_its_own_code_rows():
    vllm = engines.get("vllm")
    assert vllm.variants(("legacy", "fixed")) == (("", False),)
    assert vllm.variants(("legacy", "vllm")) == (("", False), ("vllm", True))
    assert engines.by_policy("vllm") is vllm and engines.by_policy("legacy") is None
    assert vllm.policy == "vllm" and vllm.component("registry") == "registry"  # vLLM's columns as before
    own, emulated = vllm.functions(own=True), vllm.functions(own=False)
    assert set(own) == set(emulated) == set(vllm.gate_names) - {"build"}
    assert own["pp-plan"] is emulated["pp-plan"]  # vLLM's needs a whole engine: the emulation's stands
    assert own["registry"] is not emulated["registry"]


def test_the_engines_decorator_is_a_policy():
    assert "vllm" in policy_names()
    assert get_policy("vllm").name == "vllm"


def test_a_failure_in_the_decorator_adapter_is_the_decorators_and_one_in_the_build_is_ours():
    from auditor.engines.vllm import build, decorator

    class Plain:
        pass

    with pytest.raises(KeyError) as adapter:
        decorator._build_under(Plain, lambda _: contextlib.nullcontext())  # no __init__ of its own: vLLM's would have put one
    assert auditor_bug_at(adapter.value) == ""
    with pytest.raises(AttributeError) as ours:
        build.needs_own_build(False, object())
    assert auditor_bug_at(ours.value).startswith("auditor/engines/common.py:")


def test_sglang_is_registered_with_its_gates_in_sglangs_order_and_no_decorator():
    sglang = engines.get("sglang")
    assert sglang.gate_names == ("registry", "attention-backend", "build", "embeddings", "pp-plan", "tp-plan",
                                 "attention", "vocab-embed", "compile-compatible")
    assert sglang.stopping == {"registry", "attention-backend", "build", "embeddings", "tp-plan", "attention",
                               "vocab-embed"}
    assert sglang.decorator is None and sglang.policy == "sglang"
    assert sglang.component("registry") == "sglang/registry"
    assert sglang.not_reached("attention-backend") == "not reached: SGLang stops at backend/sglang/attention-backend"
    assert sglang.variants(("fixed",)) == (("", False),)
    assert sglang.variants(("fixed", "sglang")) == (("", False), ("sglang", True))
    assert engines.by_policy("sglang") is sglang and engines.gate_policies() == {"sglang"}
    # SGLang's own policy selects gate functions, not a decorator: it is no decorator policy.
    assert "sglang" not in policy_names()
    own, emulated = sglang.functions(own=True), sglang.functions(own=False)
    assert own["embeddings"] is emulated["embeddings"]  # inline in SGLang's __init__: the emulation stands
    assert own["attention"] is not emulated["attention"]
