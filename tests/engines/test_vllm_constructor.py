"""vLLM's own constructor (auditor.engines.vllm.constructor): its real `get_model` on real default
configs, where it stops read off the traceback, and the same message from the emulation's gate.
Needs vLLM (the nox session `vllm` runs these tests; run on a CPU with VLLM_TARGET_DEVICE=cpu)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'): its own "
                                   "constructor needs it (the nox session `vllm` runs these tests)")
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # this process may have no GPU: vLLM's CPU platform

pytestmark = pytest.mark.slow  # importing vLLM alone takes half a minute here


@pytest.fixture(scope="module")
def constructed():
    """(model, Construction) of a model type, each type constructed once for the module."""
    from auditor.engines.vllm.constructor import construct
    from auditor.models.meta import build_on_meta, make_config

    done = {}

    def run(model_type):
        if model_type not in done:
            config = make_config(model_type)
            model = build_on_meta(config)
            done[model_type] = model, construct(config, tuple({type(m): None for m in model.modules()}))
        return done[model_type]

    return run


def test_vllm_builds_bert_and_the_decoder_class_is_put_back(constructed):
    model, construction = constructed("bert")
    assert construction.constructed and construction.gate is None
    assert construction.served == "TransformersEmbeddingModel"
    # vLLM decorated BertModel for good; the worker's later builds get the class as it was.
    assert type(model).__init__.__module__ == "transformers.models.bert.modeling_bert"
    assert "__call__" not in vars(type(model))
    assert not [c for c in type(model).__mro__ if c.__module__.startswith("vllm")]


def test_vllm_stops_at_the_decorator_with_the_emulations_message(constructed):
    from auditor.engines.vllm.gates import decorate_gate

    model, construction = constructed("depth_pro")
    assert (construction.gate, construction.step) == ("decorate", "base.py:174 _decorate_for_torch_compile")
    assert construction.message == decorate_gate(model).message


def test_vllm_stops_at_the_attention_scale_with_the_emulations_message(constructed):
    from auditor.engines.vllm.attention import attention_gate
    from auditor.engines.vllm.build import patched_in_place

    model, construction = constructed("modernbert")
    assert (construction.gate, construction.step) == ("attention", "base.py:191 _create_attention_instances")
    with patched_in_place(model) as config:
        assert construction.message == attention_gate(model, config).message


def test_vllms_registry_refusal_inside_its_config_validation_is_the_registry_gates(constructed):
    from auditor.engines.vllm.gates import registry_gate

    model, construction = constructed("bloom")
    # ModelConfig is a pydantic dataclass: the registry's ValueError arrives inside a ValidationError.
    assert (construction.gate, construction.step) == ("registry", "ModelConfig")
    assert construction.message == registry_gate(model.config, "bloom").message
