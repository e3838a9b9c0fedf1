"""The `serves` check under vLLM's own get_model(model_impl="auto"): which class vLLM picks for
a type (native or the Transformers backend), whether it constructs, and this machine's limits
apart (a kernel the CUDA wheel lacks on a CPU, the meta device). One sweep for the module, in a
process of its own. Needs vLLM (run with VLLM_TARGET_DEVICE=cpu on a CPU)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import read_rows, run_auditor

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'): its own "
                                   "get_model needs it")
pytestmark = pytest.mark.slow

TYPES = ("llama", "gemma", "mixtral", "bloom", "t5")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = tmp_path_factory.mktemp("serves") / "run"
    run = run_auditor("sweep", "--models", ",".join(TYPES), "--checks", "serves", "-o", str(out),
                      env={"VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")})
    assert run.returncode in (0, 1), run.stderr[-2000:]
    header, rows = read_rows(out)
    return header, {row["model_type"]: row for row in rows if row["check"] == "serves"}


def test_vllm_picks_its_native_class_or_the_backend_by_its_own_registry(served):
    from auditor.engines.vllm.releases import followed

    _, rows = served
    llama = rows["llama"]
    assert llama["status"] == "build" and llama["message"] == "servable: native LlamaForCausalLM"
    assert llama["extras"]["impl"] == "native" and llama["extras"]["architecture"] == "LlamaForCausalLM"
    gemma = rows["gemma"]
    assert gemma["status"] == "build"
    if "GemmaForCausalLM" in followed().backend_native:  # 0.34.0 sends Gemma to the backend
        assert gemma["message"] == "servable: Transformers backend (TransformersForCausalLM)"
    else:
        assert gemma["message"] == "servable: native GemmaForCausalLM"


def test_this_machines_limits_are_undecided_and_named(served):
    _, rows = served
    mixtral, bloom = rows["mixtral"], rows["bloom"]
    assert mixtral["status"] == "undecided" and mixtral["fault"] == "environment"
    assert "prepack_moe_weight" in mixtral["message"] and mixtral["extras"]["impl"] == "native"
    assert bloom["status"] == "undecided" and "meta tensor" in bloom["message"].lower()


def test_a_stop_is_attributed_and_the_shims_are_named(served):
    header, rows = served
    t5 = rows["t5"]  # its AutoModel class through the backend: the decorator's positional lookup
    assert t5["status"] == "unsupported" and t5["fault"] == "engine"
    assert "not found in the forward method" in t5["message"]
    engines = {e["name"]: e for e in header["run"]["engines"]}
    assert engines["vllm"]["version"] != "emulated"
    for row in rows.values():
        assert row["extras"].get("engine_version", engines["vllm"]["version"]) == engines["vllm"]["version"]
