"""vLLM's own constructor (auditor.engines.vllm.constructor): its real `get_model` on real default
configs, where it stops read off the traceback, and the same message from the emulation's gate.
Needs vLLM (the nox session `vllm` runs these tests; run on a CPU with VLLM_TARGET_DEVICE=cpu)."""

from __future__ import annotations

import os

import pytest

from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import without_place

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
    # The same message; vLLM's own ends with where its code raised it (the emulation's place differs)
    assert without_place(construction.message) == without_place(decorate_gate(model).message)
    assert construction.message.endswith("[raised in the engine's code at vllm/compilation/decorators.py:243]")


def test_vllm_stops_at_the_attention_scale_with_the_emulations_message(constructed):
    from auditor.engines.vllm.attention import attention_gate
    from auditor.engines.vllm.build import patched_in_place

    model, construction = constructed("modernbert")
    assert (construction.gate, construction.step) == ("attention", "base.py:191 _create_attention_instances")
    from auditor.engines.interface import safely

    with patched_in_place(model) as config:
        emulated = safely(attention_gate, model, config)
    assert without_place(construction.message) == without_place(emulated.message)
    assert "[raised in the engine's code at vllm/" in construction.message
    # vLLM's own ValueError, raised in its own code: the engine's, as the emulation's refusal is.
    assert (construction.status, construction.fault) == (emulated.status, emulated.fault)


def test_vllms_registry_refusal_inside_its_config_validation_is_the_registry_gates(constructed):
    from auditor.engines.vllm.gates import registry_gate

    model, construction = constructed("bloom")
    # ModelConfig is a pydantic dataclass: the registry's ValueError arrives inside a ValidationError.
    assert (construction.gate, construction.step) == ("registry", "ModelConfig")
    assert construction.message == registry_gate(model.config, "bloom").message


def test_vllm_asserts_a_top_k_for_its_moe_class_where_the_emulation_does(constructed):
    from auditor.engines.vllm.build import patched_in_place
    from auditor.engines.vllm.plans import tp_plan_gate

    model, construction = constructed("deepseek_v2")
    # moe.py's bare assertion (its line named in the place note): the emulation names the condition.
    assert (construction.gate, construction.step, without_place(construction.message)) == (
        "tp-plan", "base.py:189 recursive_replace", "AssertionError")
    assert "vllm/model_executor/models/transformers/moe.py:" in construction.message
    with patched_in_place(model):
        assert tp_plan_gate(model).message.startswith("AssertionError: assert top_k is not None")


def test_vllms_hidden_throwaway_build_failure_is_the_emulations_build_failure(constructed):
    from auditor.engines.vllm.build import build_like_vllm
    from auditor.engines.vllm.config import as_vllm_reads

    model, construction = constructed("kimi_linear")
    # vLLM reads kimi_linear with its own KimiLinearConfig; the throwaway build's AttributeError
    # reached Base as one naming `_pre_trained_model_classes`: the adapter recovers the build's own.
    # Its plain build passes: vLLM's build meeting the model's code, the pairing's (the one fault rule).
    assert (construction.gate, construction.status.value, construction.fault) == ("build", "unsupported", Fault.PAIRING)
    with pytest.raises(AttributeError) as raised:
        build_like_vllm(as_vllm_reads(model.config, "kimi_linear"))
    assert construction.message.startswith(f"AttributeError: {raised.value}")
    assert construction.message == classify(raised.value, Phase.ENGINE, engine_package="vllm").message


def test_a_type_vllm_serves_with_its_own_model_stops_at_the_registry(constructed):
    # glm4v_moe: no backend class for its architecture, and vLLM's registry falls back on its own
    # Glm4vMoeForConditionalGeneration (`_normalize_arch`), which get_model builds.
    _, construction = constructed("glm4v_moe")
    assert (construction.gate, construction.step) == ("registry", "ModelRegistry")
    assert construction.message == ("vLLM serves it with its own Glm4vMoeForConditionalGeneration, "
                                     "not the Transformers backend")


def test_the_emulations_table_of_vllms_own_config_classes_is_vllms():
    """The installed release's record names the types it reads with classes of its own, and the
    table holds those classes as vLLM has them."""
    from auditor.engines.vllm.releases import followed, installed_version

    if followed().version != installed_version():
        pytest.skip(f"the emulation has no record of vLLM {installed_version()}")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    from auditor.engines.vllm.config import OWN_CONFIG_CLASSES

    # Read off vLLM's registry, not AutoConfig's mapping: vLLM registers its classes there once it
    # has read a config of the type (the kimi_linear test above did).
    own = {}
    for model_type in set(CONFIG_MAPPING_NAMES) & set(dict.keys(_CONFIG_REGISTRY)):
        cls = _CONFIG_REGISTRY[model_type]
        if cls.__module__.startswith("vllm."):
            own[model_type] = (cls.__name__, dict(cls.attribute_map), cls.base_model_tp_plan, cls.base_model_pp_plan)
    assert set(followed().own_config_types) == set(own)
    assert {t: (c.name, c.aliases, c.tp_plan, c.pp_plan) for t, c in OWN_CONFIG_CLASSES.items() if t in own} == own
