"""The `backend` check: vLLM's Transformers-backend gates and SGLang's Transformers-fallback gates,
on real transformers types through the real CLI (one sweep for both engines), and on plugin types
(tests/plugins/backend_models.py) for the gates transformers' own types do not fail."""

import importlib.util
import re

import pytest

from auditor import engines
from auditor.core.errors import InputError
from auditor.core.hints import install_hint
from auditor.core.results import read_run
from auditor.core.status import Status
from tests.checks.test_decorate_check import known
from tests.conftest import run_auditor

# distilbert and biogpt: where vLLM and SGLang part ways (found on a real sweep; cheap to build).
SAMPLE = ["llama", "bloom", "jamba", "qwen2_vl", "aimv2", "distilbert", "biogpt"]
GATES = ("registry", "build", "decorate", "enable-if", "pp-plan", "tp-plan", "attention", "version:video", "version:mtp")


@pytest.fixture(scope="module")
def backend_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("backend")
    proc = run_auditor("sweep", "--checks", "build,backend", "--models", ",".join(known(SAMPLE)), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return {(r.model_type, r.component): r for r in read_run(out).results if r.check == "backend"}


@pytest.fixture(scope="module")
def real_model():
    from auditor.models.meta import build_on_meta, make_config

    return lambda model_type: build_on_meta(make_config(model_type))


def test_every_type_has_every_gate(backend_run):
    for model_type in known(SAMPLE):
        assert [g for g in GATES if (model_type, g) in backend_run] == list(GATES), model_type


def test_llama_passes_every_gate_that_applies(backend_run):
    for gate in ("registry", "build", "decorate", "enable-if", "pp-plan", "tp-plan", "attention"):
        assert backend_run[("llama", gate)].status is Status.BUILD, gate
    registry = backend_run[("llama", "registry")]
    # A default config names no architecture: vLLM fills in the AutoModel class, a pooling one.
    assert registry.extras["architecture"] == "LlamaModel"
    assert registry.extras["backend_class"] == "TransformersEmbeddingModel"
    assert registry.extras["backend_class_exists"] is True
    assert backend_run[("llama", "attention")].message == "32 layers dispatch"
    assert backend_run[("llama", "version:video")].status is Status.SKIPPED


def test_bloom_fails_the_registry_gate_and_nothing_after_it_runs(backend_run):
    registry = backend_run[("bloom", "registry")]
    assert registry.status is Status.UNSUPPORTED
    assert registry.message == "ValueError: The Transformers implementation of 'BloomModel' is not compatible with vLLM."
    for gate in GATES[1:]:
        row = backend_run[("bloom", gate)]
        assert row.status is Status.SKIPPED and row.message == "not reached: vLLM stops at backend/registry"


def test_a_hybrid_fails_attention_dispatch(backend_run):
    row = backend_run[("jamba", "attention")]
    assert row.status is Status.UNSUPPORTED
    assert row.message.startswith("ValueError: Layer 0 (")
    assert "does not dispatch through the Transformers attention interface" in row.message
    assert backend_run[("jamba", "registry")].extras["backend_class"] == "TransformersMoEEmbeddingModel"


def test_a_multimodal_type_resolves_to_the_multimodal_backend_and_its_video_floor(backend_run):
    registry = backend_run[("qwen2_vl", "registry")]
    assert registry.extras["backend_class"] == "TransformersMultiModalEmbeddingModel"
    # modeling_qwen2_vl reads the attention implementation while building: vLLM's build is made.
    assert backend_run[("qwen2_vl", "build")].extras["own_build"] is True
    assert backend_run[("qwen2_vl", "attention")].status is Status.BUILD
    assert backend_run[("qwen2_vl", "version:video")].status is Status.BUILD


def test_a_decoder_without_inputs_embeds_stops_before_vllm_replaces_modules(backend_run):
    # vLLM decorates the decoder (base.py:174) before recursive_replace (base.py:189) would find
    # that aimv2 does not implement get_input_embeddings: it stops at the decorator.
    row = backend_run[("aimv2", "decorate")]
    assert row.status is Status.UNSUPPORTED
    assert row.message.startswith("ValueError: Argument inputs_embeds not found in the forward method of ")
    assert backend_run[("aimv2", "tp-plan")].message == "not reached: vLLM stops at backend/decorate"


# -- SGLang's gates, from the same sweep -------------------------------------------------------------

SGLANG = engines.get("sglang")


def _first_stop(backend_run, model_type: str, engine) -> str | None:
    """The first gate at which `engine` stops `model_type` in the sweep, or None."""
    return next((gate for gate in engine.gate_names
                 if engine.stops_at(gate, (backend_run[(model_type, engine.component(gate))].status, "", {}))), None)


def test_every_type_has_a_column_per_sglang_gate(backend_run):
    for model_type in known(SAMPLE):
        assert [g for g in SGLANG.gate_names if (model_type, f"sglang/{g}") in backend_run] == list(SGLANG.gate_names)


def test_llama_passes_every_sglang_gate(backend_run):
    for gate in SGLANG.gate_names:
        row = backend_run[("llama", f"sglang/{gate}")]
        assert row.status is Status.BUILD, (gate, row.message)
    assert backend_run[("llama", "sglang/registry")].message == "TransformersForCausalLM"
    assert backend_run[("llama", "sglang/attention")].message == "32 attention instances"
    assert backend_run[("llama", "sglang/compile-compatible")].extras["compile_enabled"] is True


def test_bloom_stops_sglang_at_the_attention_backend_with_sglangs_message(backend_run):
    row = backend_run[("bloom", "sglang/attention-backend")]
    assert row.status is Status.UNSUPPORTED
    assert row.message == ("ValueError: Model <class 'transformers.models.bloom.modeling_bloom.BloomModel'> does not "
                           "support custom attention backends (_supports_attention_backend=False). The Transformers "
                           "backend requires custom attention support.")
    for gate in SGLANG.gate_names[2:]:
        later = backend_run[("bloom", f"sglang/{gate}")]
        assert later.status is Status.SKIPPED
        assert later.message == "not reached: SGLang stops at backend/sglang/attention-backend"


def test_vllm_and_sglang_part_ways_on_real_types(backend_run):
    """distilbert's layers do not dispatch attention through transformers' interface, which stops
    vLLM's attention gate, while SGLang's constructor makes an attention instance per layer without
    looking; biogpt's class sets `_supports_attention_backend = False`, which SGLang refuses and vLLM
    lets pass (it also takes a class that can set its attention implementation)."""
    vllm = engines.get("vllm")
    assert _first_stop(backend_run, "distilbert", vllm) == "attention"
    assert "does not dispatch through the Transformers attention interface" in \
        backend_run[("distilbert", "attention")].message
    assert _first_stop(backend_run, "distilbert", SGLANG) is None
    assert _first_stop(backend_run, "biogpt", vllm) is None
    assert _first_stop(backend_run, "biogpt", SGLANG) == "attention-backend"
    assert "(_supports_attention_backend=False)" in backend_run[("biogpt", "sglang/attention-backend")].message


@pytest.mark.skipif(SGLANG.installed, reason="SGLang is installed: tests/engines/test_sglang_own.py sweeps "
                                             "under its policy")
def test_the_sglang_policy_needs_sglang(tmp_path):
    import auditor

    with pytest.raises(InputError, match=r"policy 'sglang' needs SGLang installed: "
                                         + re.escape(install_hint("sglang"))):
        auditor.sweep(tmp_path / "run", models=["llama"], checks=["backend"], policies=["fixed", "sglang"])
    assert not (tmp_path / "run" / "results.jsonl").exists()


# -- the gates on plugin types ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def plugin_models():
    import tests.plugins.backend_models  # noqa: F401  (registers the types)
    from auditor.models.meta import build_on_meta, make_config

    def build(model_type):
        config = make_config(model_type)
        return config, build_on_meta(config)

    return build


class _Answer:
    """A gate's outcome as the backend check gets it (through `safely`, the one fault rule)."""

    def __init__(self, outcome):
        from auditor.core.status import Failure
        from auditor.engines.interface import passed

        self.ok = passed(outcome)
        self.failure = outcome if isinstance(outcome, Failure) else None
        self.message = outcome.message if self.failure else outcome[1]


def _gates(model):
    from auditor.engines.interface import safely
    from auditor.engines.vllm.attention import attention_gate
    from auditor.engines.vllm.build import patched_in_place
    from auditor.engines.vllm.plans import pp_plan_gate, tp_plan_gate

    with patched_in_place(model) as config:
        return tuple(_Answer(safely(gate, *args)) for gate, args in
                     ((pp_plan_gate, (model,)), (tp_plan_gate, (model,)), (attention_gate, (model, config))))


def test_the_control_plugin_passes_the_plan_and_attention_gates(plugin_models):
    _, model = plugin_models("auditor_backend_ok")
    pp, tp, attention = _gates(model)
    assert (pp.ok, tp.ok, attention.ok) == (True, True, True)
    assert attention.message == "2 layers dispatch"
    assert model.config._attn_implementation != "vllm", "the stand-in build was not put back"


def test_a_registered_type_has_no_architecture_vllm_can_resolve(plugin_models):
    from auditor.engines.vllm.gates import registry_gate

    config, _ = plugin_models("auditor_backend_ok")
    assert registry_gate(config, "auditor_backend_ok").message == "ValueError: No model architectures are specified"
    config.architectures = ["AuditorBackendOkModel"]
    assert registry_gate(config, "auditor_backend_ok").message.startswith("ValueError: Cannot find model module.")


@pytest.mark.parametrize("model_type, gate, message", [
    ("auditor_backend_two_lists", 0, "ValueError: Pipeline parallel of models with multiple `ModuleList`s"),
    ("auditor_backend_no_list", 0, "ValueError: Could not find `ModuleList` in "),
    ("auditor_backend_tuple_style", 1, "ValueError: Unsupported parallel style type <class 'tuple'>, expected str"),
    ("auditor_backend_no_embeddings", 1, "NotImplementedError: `get_input_embeddings` not auto-handled for "),
    ("auditor_backend_two_attentions", 2, "ValueError: Layer 0 dispatches attention from more than one module "
                                          "(model.layers.0.attentions.0 and model.layers.0.attentions.1)"),
    ("auditor_backend_no_attention", 2, "ValueError: Layer 0 does not dispatch through the Transformers attention"),
])
def test_each_plugin_fails_its_gate_with_vllms_message(plugin_models, model_type, gate, message):
    _, model = plugin_models(model_type)
    verdict = _gates(model)[gate]
    assert not verdict.ok
    assert verdict.message.startswith(message)
    assert verdict.failure.status is Status.UNSUPPORTED  # the engine stops; not a bug of ours


def test_enable_if_raises_where_vllm_reads_a_rope_type_that_is_missing():
    from transformers import LlamaConfig

    from auditor.engines.vllm.gates import enable_if_gate

    config = LlamaConfig()
    assert enable_if_gate(config).ok
    config.rope_parameters = {"rope_theta": 10000.0}
    assert enable_if_gate(config).message == "KeyError: 'rope_type'"
    # vLLM's default max_model_len is max_position_embeddings x the rope factor (config/model.py:
    # 2603-2634, "dynamic" scales it): at factor 2 the dynamic rope can still rescale, compile is off;
    # at factor 1 it never does, and vLLM drops it (disable_noop_dynamic_rope).
    config.rope_parameters = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    assert enable_if_gate(config).extras == {"compile_enabled": False}
    config.rope_parameters = {"rope_type": "dynamic", "factor": 1.0, "rope_theta": 10000.0}
    assert enable_if_gate(config).extras == {"compile_enabled": True}


# -- steps of Base.__init__ that stop real transformers types (messages as vLLM 0.33.0's get_model
# raised them on transformers 5.18.0: base.py:174 and decorators.py:242, base.py:651 and
# fusers/attention.py:145, base.py:545) --------------------------------------------------------

def test_a_decoder_without_the_dynamic_arguments_stops_where_vllm_decorates_it(real_model):
    from auditor.engines.vllm.gates import decorate_gate

    model = real_model("depth_pro")
    verdict = decorate_gate(model)
    assert verdict.message == ("ValueError: Argument input_ids not found in the forward method of "
                               "<class 'transformers.models.depth_pro.modeling_depth_pro.DepthProModel'>")
    assert verdict.extras == {"decoder": "DepthProModel"}


def test_a_config_without_a_layer_count_stops_recursive_replace(real_model):
    from auditor.engines.vllm.build import patched_in_place
    from auditor.engines.vllm.plans import tp_plan_gate

    model = real_model("depth_pro")
    with patched_in_place(model):
        verdict = tp_plan_gate(model)
    assert verdict.message == "AttributeError: 'DepthProConfig' object has no attribute 'num_hidden_layers'"
    assert verdict.extras["where"] == "Base.recursive_replace"


def test_an_attention_scale_vllm_cannot_resolve_stops_the_attention_instances(real_model):
    from auditor.core.fault import Fault
    from auditor.engines.interface import safely
    from auditor.engines.vllm.attention import attention_gate
    from auditor.engines.vllm.build import patched_in_place

    model = real_model("modernbert")
    with patched_in_place(model) as config:
        failure = safely(attention_gate, model, config)
    assert failure.message == ("ValueError: Cannot resolve attention scaling expression 'self.head_dim ** (-0.5)' "
                               "in ModernBertAttention.")
    assert (failure.status, failure.fault) == (Status.UNSUPPORTED, Fault.ENGINE)


def test_version_floor_message_is_vllms():
    from auditor.engines.vllm.gates import version_gate

    assert version_gate("video inputs", "5.18.0", "5.17.1").message == (
        "ImportError: Transformers modeling backend requires transformers>=5.18.0 for video inputs, but got 5.17.1")
    assert version_gate("MTP", "5.20.0", "5.24.0").ok


VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.slow
@pytest.mark.skipif(not VLLM, reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'): "
                                     "the backend check's vllm rows need its own functions")
def test_the_emulation_agrees_with_vllms_own_functions(tmp_path):
    out = tmp_path / "run"
    proc = run_auditor("sweep", "--checks", "build,backend", "--policies", "legacy,vllm",
                       "--models", ",".join(known(SAMPLE)), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    proc = run_auditor("agree", str(out), "--policies", "legacy,vllm")
    assert proc.returncode == 0, proc.stdout
    assert "0 disagree" in proc.stdout


# -- the joint encoder cell of the decorate check (vLLM's compile_mm_encoder) -----------------------

def _decorate_rows(model_type, policies=("legacy", "fixed")):
    from auditor.checks import get
    from auditor.checks.interface import CaseContext, Options
    from auditor.models.cases import ModelCase

    case = ModelCase(model_type)
    rows = get("decorate").run(case, CaseContext(case, Options(policies=policies, checks=("decorate",))))
    return {(r.component, r.policy): r for r in rows}


def test_the_joint_cell_decorates_decoder_and_encoders_together():
    rows = _decorate_rows("qwen2_vl")
    assert set(rows) == {(c, p) for c in ("decoder", "decoder+encoders") for p in ("legacy", "fixed")}
    joint = rows[("decoder+encoders", "fixed")]
    assert joint.status is Status.BUILD
    assert joint.extras["class"].startswith("Qwen2VLTextModel + image: ")


def test_in_the_joint_cell_the_first_refusal_of_the_build_wins():
    if "t5gemma2" not in known(["t5gemma2"]):
        pytest.skip("this transformers has no t5gemma2")
    rows = _decorate_rows("t5gemma2")
    # The encoder is built before the decoder, so its refusal is the one vLLM would raise.
    assert rows[("decoder", "legacy")].message.startswith("TypeError: 'T5Gemma2Decoder.__init__'")
    assert rows[("decoder+encoders", "legacy")].message.startswith("TypeError: 'T5Gemma2Encoder.__init__'")
    assert rows[("decoder+encoders", "fixed")].status is Status.BUILD


def test_a_multimodal_config_without_encoders_gets_vllms_error():
    import tests.plugins.backend_models  # noqa: F401
    from auditor.engines.vllm.decorators.verdicts import NO_ENCODERS

    row = _decorate_rows("auditor_no_encoder")[("decoder+encoders", "fixed")]
    assert row.status is Status.DECORATE_ERROR
    assert row.message == NO_ENCODERS


def test_model_code_that_reads_or_copies_the_config_asks_for_vllms_own_build():
    import copy

    from transformers import LlamaConfig, PreTrainedConfig

    from auditor.engines.common import needs_own_build, reads_attention

    config = LlamaConfig()
    with reads_attention() as reads:
        config._attn_implementation  # noqa: B018  (a read, as a model's __init__ makes it)
    assert reads.files == {__file__}
    with reads_attention() as reads:
        copy.deepcopy(config)  # a copy keeps the implementation it had (longt5's stacks)
    assert reads.files == {__file__} and needs_own_build(False, reads)
    assert "__deepcopy__" not in PreTrainedConfig.__dict__, "the copy hook outlived its block"
    with reads_attention() as reads:
        pass
    assert not needs_own_build(False, reads) and needs_own_build(True, reads)


def test_a_moe_config_without_a_top_k_stops_recursive_replace_at_vllms_assertion():
    # deepseek_v2's default config has num_experts_per_tok=None: vLLM 0.33.0's get_model raised a
    # bare AssertionError at base.py:189 (moe.py:225) on transformers 5.18.0.
    from auditor.engines.vllm.build import patched_in_place
    from auditor.engines.vllm.plans import tp_plan_gate
    from auditor.models.meta import build_on_meta, make_config

    config = make_config("deepseek_v2")
    config.num_hidden_layers = 2  # the default's 27 layers cost half a minute; one MoE layer suffices
    model = build_on_meta(config)
    with patched_in_place(model):
        verdict = tp_plan_gate(model)
    assert verdict.message == "AssertionError: assert top_k is not None (vLLM's MoEMixin.recursive_replace)"
    assert verdict.extras["where"] == "MoEMixin.recursive_replace"
    with patched_in_place(model) as config:
        config.num_experts_per_tok = 2  # a top-k: the assertions hold and the plan is read
        assert tp_plan_gate(model).ok


def test_vllm_builds_kimi_linear_from_its_own_config_class_which_lacks_transformers_aliases():
    # vLLM 0.33.0 reads kimi_linear's config.json with its own KimiLinearConfig, without
    # transformers' `num_local_experts` alias: its throwaway build raised this on transformers 5.18.0;
    # vLLM 0.34.0's class lacks `layer_types` too, which its build reads first.
    from auditor.engines.vllm.build import build_like_vllm
    from auditor.engines.vllm.config import as_vllm_reads
    from auditor.models.meta import make_config

    config = make_config("kimi_linear")
    read = as_vllm_reads(config, "kimi_linear")
    assert type(read).__name__ == "KimiLinearConfig" and read.num_experts == config.num_experts
    with pytest.raises(AttributeError, match="'KimiLinearConfig' object has no attribute '(num_local_experts|layer_types)'"):
        build_like_vllm(read)
    assert as_vllm_reads(make_config("llama"), "llama").__class__.__name__ == "LlamaConfig"
