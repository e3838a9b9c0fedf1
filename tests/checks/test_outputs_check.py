"""The outputs check's two halves that need no engine: the tiny checkpoint an engine is given
(auditor.models.served) and the rule that holds an engine's outputs to transformers'
(auditor.engines.outputs). The engine's real runs are tests/engines/test_served_outputs.py, in
vLLM's CPU build; without vLLM the check is refused before any work."""

from __future__ import annotations

import pytest

from tests.conftest import run_auditor


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    import transformers

    from auditor.models.served import write

    folder = tmp_path_factory.mktemp("served") / "llama"
    return write(transformers.AutoConfig.for_model("llama"), "llama", folder, head_size=32, length=48)


def test_the_checkpoint_is_in_the_engines_head_size_untied_and_loads_as_saved(llama):
    import json

    import torch
    import transformers

    config = json.loads((llama.folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] == [llama.architecture]
    assert config["head_dim"] == 32 and config["hidden_size"] == 4 * 32
    assert config["tie_word_embeddings"] is False
    assert len(llama.prompt) == 48 and all(0 <= i < llama.vocab for i in llama.prompt)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(llama.folder, dtype=torch.float32).eval()
    ids = torch.tensor([llama.prompt])
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, llama.model(ids).logits)
        # the head is its own tensor, and the drawn weights make the logits far from flat
        assert not torch.equal(loaded.lm_head.weight, loaded.model.embed_tokens.weight)
        spread = torch.log_softmax(loaded(ids).logits[0], -1).max(-1).values
    assert spread.mean() > -4.0  # a flat distribution over 1024 ids: log(1/1024) = -6.9 (drawn: about -2)


def test_the_same_model_is_the_same_and_a_changed_one_differs_with_its_numbers(llama):
    import copy

    import torch

    from auditor.core.status import Failure, Status
    from auditor.engines.outputs import reference_outputs, verdict

    reference = reference_outputs(llama.model, llama.prompt)
    again = reference_outputs(copy.deepcopy(llama.model), llama.prompt)
    status, message, extras = verdict(reference, again, "float32", "the copy", {})
    assert status is Status.SAME and extras["top1_equal"] == extras["positions"] == 47
    assert extras["max_logprob_diff"] == 0.0

    changed = copy.deepcopy(llama.model)
    with torch.no_grad():
        changed.model.layers[1].mlp.down_proj.weight.mul_(1.5)
    found = verdict(reference, reference_outputs(changed, llama.prompt), "float32", "the changed copy", {})
    assert isinstance(found, Failure) and found.status is Status.DIFFERENT_OUTPUTS
    assert found.fault.value == "engine"
    assert found.extras["max_logprob_diff"] > 1e-3
    assert "the changed copy differs from transformers: max logprob difference" in found.message
    assert f"top token equal at {found.extras['top1_equal']}/47 positions" in found.message


def test_greedy_tokens_follow_vllms_rule():
    from auditor.engines.outputs import Outputs, compare

    rows = ({1: -0.1, 2: -2.5},)
    reference = Outputs(rows, (5, 6), ({5: -0.2, 7: -0.9}, {6: -0.1}))
    # diverging where each token is among the other's top: accepted, nothing after compared
    close = Outputs(rows, (7, 9), ({7: -0.3, 5: -0.4}, {9: -0.1}))
    assert compare(reference, close).greedy == ""
    # the engine's token not among transformers' top: a difference
    far = Outputs(rows, (8, 6), ({8: -0.1, 5: -3.0}, {6: -0.1}))
    assert "greedy step 0" in compare(reference, far).greedy


def test_without_an_engine_that_runs_models_the_check_is_refused_before_any_work(tmp_path):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    proc = run_auditor("sweep", "--models", "llama", "--checks", "outputs", "-o", str(tmp_path / "run"))
    assert proc.returncode == 2
    assert "check 'outputs' needs vllm installed" in proc.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_sglang_says_why_it_runs_no_forward_here():
    # SGLang's rows name this machine's limit (its CPU kernels are not on the package index)
    # rather than leave the engine out; this needs no SGLang: its run never imports it.
    import torch

    from auditor.checks.outputs import components
    from auditor.core.classifier import Phase, classify
    from auditor.core.status import Status
    from auditor.engines import get

    sglang = get("sglang")
    assert components(sglang) == (("sglang", "auto"),)
    with pytest.raises(Exception) as raised:
        sglang.runs(None, (1, 2), "auto", "float32", 4, 1024)
    failure = classify(raised.value, Phase.ENGINE, engine_package="sglang")
    if torch.cuda.is_available():
        assert failure.status is Status.SKIPPED and "not built" in failure.message
    else:
        assert failure.status is Status.UNDECIDED and failure.fault.value == "environment"
        assert "sgl-kernel wheels on the package index are CUDA builds" in failure.message
