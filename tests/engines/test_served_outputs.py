"""The outputs check in vLLM's CPU build (vllm-cpu, scripts/install_vllm_cpu.sh): vLLM runs each
type's tiny checkpoint for real on this CPU, in the sweep's worker, and its logprobs are held to
transformers' own. One sweep for the module: llama (both paths agree), gpt2 (vLLM's own loader
refuses its Transformers backend's c_attn.bias) and mamba2 (vLLM's native class gives other
tokens), the serves check beside them. Listed in tests/engines/VLLM_CPU_TESTS, which CI runs in
that venv; skipped where vLLM is not installed, or is a build that runs no forward on a CPU."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import read_rows, run_auditor

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed (scripts/install_vllm_cpu.sh makes a venv with its CPU build)",
                allow_module_level=True)


def _runs_forwards() -> bool:
    """vLLM's CPU build (the distribution vllm-cpu), or a GPU for its CUDA build."""
    import importlib.metadata

    import torch

    try:
        importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return torch.cuda.is_available()
    return True


if not _runs_forwards():
    pytest.skip("this vLLM is its CUDA build and there is no GPU: it runs no forward here (the CPU build does: "
                "scripts/install_vllm_cpu.sh)", allow_module_level=True)
pytestmark = pytest.mark.slow
TYPES = ("llama", "gpt2", "mamba2")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("outputs") / "run"
    proc = run_auditor("sweep", "--models", ",".join(TYPES), "--checks", "backend,serves,outputs", "-o", str(out),
                       "-j", "1")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    header, rows = read_rows(out)
    return header, {(r["model_type"], r["check"], r["component"]): r for r in rows}, out


def test_every_type_gets_a_row_per_path_with_the_engine_release(swept):
    import importlib.metadata

    from auditor.engines.interface import installed_version

    _, rows, _ = swept
    for model_type in TYPES:
        for component in ("vllm", "vllm/transformers"):
            row = rows[(model_type, "outputs", component)]
            assert row["extras"]["engine_version"] == installed_version("vllm"), row
            # the pairing it ran: this venv's transformers is inside vllm-cpu's own requirement
            assert row["extras"]["pairing"] == (f"vllm-cpu {installed_version('vllm')} with transformers "
                                                f"{importlib.metadata.version('transformers')}"), row
    # vLLM's CPU build is its own distribution, imported as `vllm`: the row names its release.
    assert installed_version("vllm") == importlib.metadata.version("vllm-cpu")


def test_llama_served_both_ways_gives_transformers_logprobs(swept):
    _, rows, _ = swept
    for component, served in (("vllm", "LlamaForCausalLM"), ("vllm/transformers", "TransformersForCausalLM")):
        row = rows[("llama", "outputs", component)]
        assert row["status"] == "same", row
        extras = row["extras"]
        assert extras["architecture"] == served
        assert extras["max_logprob_diff"] <= extras["tolerance"] == 1e-3
        assert extras["top1_equal"] == extras["positions"] == extras["prompt_length"] - 1
        assert extras["greedy"] == extras["greedy_transformers"]
        assert extras["head_size"] == 32  # the CPU attention's smallest head size


def test_gpt2_on_the_transformers_backend_is_refused_by_vllms_own_loader(swept):
    _, rows, _ = swept
    row = rows[("gpt2", "outputs", "vllm/transformers")]
    assert row["fault"] == "engine", row
    assert "c_attn.bias" in row["message"] and "not initialized from checkpoint" in row["message"]
    assert row["extras"]["raised_at"].startswith("vllm/model_executor/model_loader/"), row
    # its native class serves the same checkpoint with transformers' outputs, its head untied
    native = rows[("gpt2", "outputs", "vllm")]
    assert native["status"] == "same", native
    assert native["extras"]["changed"]["tie_word_embeddings"] == [True, False]
    # and the serves check, which stops before the first token, calls gpt2 servable
    assert rows[("gpt2", "serves", "vllm")]["status"] == "build"


def test_agree_lists_where_the_answer_before_the_first_token_and_the_real_run_part(swept):
    _, _, out = swept
    proc = run_auditor("agree", str(out))
    assert proc.returncode == 1, proc.stderr
    table = proc.stdout.split("real runs against the answers before the first token", 1)[1]
    lines = {line.split("|")[1].strip() + " " + line.split("|")[2].strip(): line for line in table.splitlines()
             if line.startswith("| ") and not line.startswith("| model type")}
    # every emulated gate of the Transformers backend passes gpt2; vLLM's own loader refuses it
    assert "the emulated Transformers backend gates: servable" in lines["gpt2 outputs/vllm/transformers"]
    assert "c_attn.bias" in lines["gpt2 outputs/vllm/transformers"]
    assert "llama outputs/vllm" not in lines and "llama outputs/vllm/transformers" not in lines


def test_a_real_difference_in_a_real_run_is_caught(swept):
    # vLLM's native Mamba2 on the same checkpoint gives other tokens than transformers 5.19's
    # Mamba2 (the release vllm-cpu 0.32.0 takes; 5.25.0's agrees with vLLM, so it is the pairing's):
    # nothing in this test edits a number; the engine ran and returned them.
    import transformers

    if not transformers.__version__.startswith("5.19."):
        pytest.skip(f"the difference is of transformers 5.19's Mamba2 (scripts/install_vllm_cpu.sh); "
                    f"this is {transformers.__version__}")
    _, rows, _ = swept
    row = rows[("mamba2", "outputs", "vllm")]
    assert row["status"] == "different-outputs" and row["fault"] == "engine/model", row
    extras = row["extras"]
    assert extras["architecture"] == "Mamba2ForCausalLM" and not extras["transformers_backend"]
    assert extras["max_logprob_diff"] > 1.0 and extras["top1_equal"] < extras["positions"] // 2
    assert f"top token equal at {extras['top1_equal']}/{extras['positions']}" in row["message"]
