"""The `decorate` check on real transformers model types, through the real CLI and workers."""

import importlib.util

import pytest

from auditor.core.results import read_run
from auditor.report.agreement import compare_policies
from tests.conftest import run_auditor, run_auditors

# A spread of families: text decoders, encoder-decoders, vision-language, audio, vision-only,
# configs that subclass another model's config, a model without a decoder, a plain failure.
SAMPLE = [
    "llama", "gpt2", "bert", "t5", "t5gemma", "t5gemma2", "whisper", "llava", "qwen2_vl", "clip",
    "vit", "perceiver", "autoformer", "exaone4", "internlm3", "mixtral", "dpr", "blip", "wav2vec2",
    "gemma3", "paligemma", "bart",
]


def known(names):
    """The sample less the types this transformers does not have (it is run on several versions)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return [name for name in names if name in MODEL_MAPPING_NAMES]


def cells(out):
    return {(r.model_type, r.check, r.component, r.policy): r for r in read_run(out).results}


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    """The sample swept twice at once: with one build shared by the policies (the default), and
    with a build per policy; the two outputs, in that order."""
    outs = [tmp_path_factory.mktemp("decorate"), tmp_path_factory.mktemp("decorate-per-policy")]
    common = ["sweep", "--checks", "build,decorate", "--models", ",".join(known(SAMPLE))]
    procs = run_auditors([[*common, "-o", str(outs[0])], [*common, "--build-per-policy", "-o", str(outs[1])]])
    return list(zip(procs, outs, strict=True))


@pytest.fixture(scope="module")
def sample_run(sample_runs):
    proc, out = sample_runs[0]
    assert proc.returncode == 0, proc.stderr
    return out


def test_one_row_per_component_and_policy(sample_run):
    rows = cells(sample_run)
    for model_type in known(SAMPLE):
        for policy in ("legacy", "fixed", "fixed-no-config-skip"):
            assert (model_type, "decorate", "decoder", policy) in rows, (model_type, policy)
    encoders = {key[2] for key in rows if key[0] == "llava" and key[1] == "decorate"}
    assert encoders == {"decoder", "decoder+encoders"}
    # A text-only config: vLLM looks for no encoders, so there is no joint cell.
    assert {key[2] for key in rows if key[0] == "llama" and key[1] == "decorate"} == {"decoder"}


def test_legacy_refuses_a_valid_model_that_fixed_builds(sample_run):
    """The shipped check compares each argument with the annotation of the parameter before it."""
    rows = cells(sample_run)
    refused = [key for key, r in rows.items() if key[3] == "legacy" and r.status.value == "refused"]
    assert refused, "no legacy refusal among the sample: did transformers change?"
    for model_type, check, component, _ in refused:
        assert rows[(model_type, check, component, "fixed")].status.value == "build"
        message = rows[(model_type, check, component, "legacy")].message
        assert "received a positional argument of type" in message
        assert "Please either annotate" in message


def test_config_skip_matters_for_configs_of_another_class(sample_run):
    """A model built from a config that subclasses another's: only the config exemption lets it through."""
    if not known(["internlm3"]):
        # On transformers 5.24.0 internlm3 and t5gemma are such types; on 5.18-5.22 internlm3 is absent
        # and t5gemma is not one.
        pytest.skip("no type of the sample builds from another model's config class in this transformers")
    rows = cells(sample_run)
    refused = [key for key, r in rows.items() if key[3] == "fixed-no-config-skip" and r.status.value == "refused"]
    assert refused
    for model_type, check, component, _ in refused:
        assert rows[(model_type, check, component, "fixed")].status.value == "build"
        assert "Config'" in rows[(model_type, check, component, "fixed-no-config-skip")].message


def test_decoration_failures_are_decorate_errors(sample_run):
    rows = cells(sample_run)
    t5 = rows[("t5", "decorate", "decoder", "legacy")]
    assert t5.status.value == "decorate-error"
    assert "Argument position_ids not found in the forward method" in t5.message
    # Perceiver has no decoder: vLLM would try to decorate type(None).
    assert rows[("perceiver", "decorate", "decoder", "fixed")].status.value == "decorate-error"


def test_plain_failures_keep_their_status_on_every_policy(sample_run):
    rows = cells(sample_run)
    plain = rows[("autoformer", "build", "", "")]
    assert plain.status.value == "error"
    for policy in ("legacy", "fixed", "fixed-no-config-skip"):
        row = rows[("autoformer", "decorate", "decoder", policy)]
        assert (row.status, row.signature) == (plain.status, plain.signature)


def test_shared_build_gives_the_same_rows_as_a_build_per_policy(sample_run, sample_runs):
    proc, per_policy = sample_runs[1]
    assert proc.returncode == 0, proc.stderr
    shared, each = cells(sample_run), cells(per_policy)
    assert shared.keys() == each.keys()
    for key in shared:
        assert (shared[key].status, shared[key].message) == (each[key].status, each[key].message), key


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                    reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'; the nox session "
                           "`vllm` runs this over every model type)")
def test_legacy_agrees_with_the_real_vllm_decorator(tmp_path):
    sample = known(SAMPLE)
    assert len(sample) >= 20
    proc = run_auditor("sweep", "--checks", "build,decorate", "--policies", "legacy,vllm",
                       "--models", ",".join(sample), "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    agreement = compare_policies(read_run(tmp_path), "legacy", "vllm")
    assert agreement.compared >= len(sample)
    assert agreement.agrees, [(d.model_type, d.component, d.what) for d in agreement.disagreements]
