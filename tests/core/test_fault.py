"""The one fault rule (auditor.core.classifier.classify with auditor.core.fault): every value on a
real exception, raised where the rule says it is judged. Real transformers classes, real auditor
gate functions, real plugin models (tests/plugins/fault_models.py); nothing is faked."""

from __future__ import annotations

import pytest

import tests.plugins.fault_models  # noqa: F401  (registers the plugin types)
from auditor.core.classifier import Phase, classify
from auditor.core.fault import EngineRefusal, Fault, per_layer_read
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.engines.interface import Verdict, safely
from auditor.models.meta import build_on_meta, make_config


def _raised(function, *args):
    with pytest.raises(Exception) as info:
        function(*args)
    return info.value


def test_a_model_that_fails_on_its_own_is_the_models():
    from transformers import LlamaModel

    failure = classify(_raised(LlamaModel, None))
    assert (failure.status, failure.fault) == (Status.ERROR, Fault.MODEL)
    assert failure.extras["raised_by"] == "model" and failure.extras["raised_at"].startswith("transformers/")


def test_an_emulated_refusal_is_the_engines():
    outcome = Verdict(False, "ValueError: no", {"where": "x"}).outcome()
    assert isinstance(outcome, Failure)
    assert (outcome.status, outcome.fault, outcome.message) == (Status.UNSUPPORTED, Fault.ENGINE, "ValueError: no")
    assert outcome.extras["where"] == "x"
    refusal = classify(EngineRefusal("AssertionError: Cannot determine top_k from config."))
    assert (refusal.status, refusal.fault) == (Status.UNSUPPORTED, Fault.ENGINE)


def test_model_code_raising_at_an_engines_step_is_the_pairings_and_names_the_line():
    """vLLM's setting `_attn_implementation = "vllm"` meets sam's own attention-class dict."""
    from auditor.engines.vllm.build import build_like_vllm

    exc = _raised(build_like_vllm, make_config("sam"))
    assert isinstance(exc, KeyError)
    assert classify(exc).status is Status.ERROR  # judged as a plain build: the model's
    failure = classify(exc, Phase.ENGINE, engine_package="vllm")
    assert (failure.status, failure.fault) == (Status.UNSUPPORTED, Fault.PAIRING)
    assert "SAM_VISION_ATTENTION_CLASSES[config._attn_implementation]" in failure.message
    assert "modeling_sam.py:" in failure.message
    assert failure.signature == "KeyError: 'vllm'"  # the line is not part of the cause


def test_the_auditors_own_gate_code_failing_is_an_auditor_error_never_a_refusal():
    """A plugin model whose pp plan is a list: vLLM's pp-plan gate as the auditor wrote it calls
    `.keys()` on it, in the auditor's own frame."""
    from auditor.engines.vllm import plans

    model = build_on_meta(make_config("auditor_fault_list_pp_plan"))
    outcome = safely(plans.pp_plan_gate, model, package="vllm")
    assert isinstance(outcome, Failure)
    assert (outcome.status, outcome.fault) == (Status.AUDITOR_ERROR, Fault.AUDITOR)
    assert "[auditor bug at auditor/engines/vllm/plans.py:" in outcome.message
    # At an engine's step any exception type in our frames is ours, not just programming errors.
    from auditor import engines

    exc = _raised(engines.get, "no-such-engine")  # a ValueError raised in auditor/engines/__init__.py
    assert classify(exc, Phase.ENGINE).fault is Fault.AUDITOR


def test_the_meta_devices_limits_are_the_environments_undecided():
    exc = _raised(build_on_meta, make_config("auditor_fault_meta_copy"))
    failure = classify(exc)
    assert (failure.status, failure.fault) == (Status.UNDECIDED, Fault.ENVIRONMENT)
    assert "Cannot copy out of meta tensor" in failure.message
    assert classify(exc, Phase.ENGINE).status is Status.UNDECIDED  # never a verdict, at any step


def test_a_kernel_the_wheel_lacks_is_undecided():
    import torch

    exc = _raised(lambda: torch.ops._C.prepack_moe_weight_that_no_wheel_has)
    assert classify(exc, Phase.ENGINE).status is Status.UNDECIDED


def test_a_missing_package_is_the_environments():
    def needs_timm():
        import timm_that_is_not_installed  # noqa: F401

    assert classify(_raised(needs_timm), Phase.ENGINE).fault is Fault.ENVIRONMENT


def test_a_per_layer_attribute_read_globally_at_an_engines_step_is_the_engines_with_the_reader():
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if "dots3_note" not in CONFIG_MAPPING_NAMES:
        pytest.skip("no heterogeneous config type in this transformers")
    config = make_config("dots3_note")
    exc = _raised(lambda: config.text_config.num_attention_heads)
    attribute, reader = per_layer_read(exc)
    assert attribute == "num_attention_heads" and reader.startswith("test_fault.py:")  # the reader, not transformers
    failure = classify(exc, Phase.ENGINE)
    assert (failure.status, failure.fault) == (Status.UNSUPPORTED, Fault.ENGINE)
    assert failure.signature.startswith("the engine reads per-layer attribute 'num_attention_heads' globally at ")


def test_a_row_without_a_failure_gets_its_statuss_fault():
    assert Result("x", "build", Status.BUILD).fault == ""
    assert Result("x", "build", Status.OOM).fault == "environment"
    assert Result("x", "decorate", Status.REFUSED).fault == "engine"
    assert Result("x", "build", Status.AUDITOR_ERROR).fault == "auditor"
    row = Result.failed("x", "backend", classify(EngineRefusal("ValueError: no", extras={"k": 1})), component="g")
    assert (row.status, row.fault, row.extras["k"], row.component) == (Status.UNSUPPORTED, "engine", 1, "g")
    assert Result.from_json(row.to_json()) == row
