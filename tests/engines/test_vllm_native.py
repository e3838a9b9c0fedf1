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
SWEPT: dict = {}  # the module's sweep: its run directory and what it printed


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = tmp_path_factory.mktemp("serves") / "run"
    # `--engine vllm`: the vLLM installed here, in this sweep (its serves check and policy added)
    run = run_auditor("sweep", "--engine", "vllm", "--models", ",".join(TYPES), "--checks", "serves",
                      "-o", str(out), env={"VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")})
    assert run.returncode in (0, 1), run.stderr[-2000:]
    header, rows = read_rows(out)
    SWEPT.update(out=out, stderr=run.stderr)
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


def test_the_engine_here_adds_its_policy_and_the_header_names_its_shims(served):
    from auditor.engines.vllm import shims

    header, rows = served
    assert "vllm" in header["run"]["experiment"]["policies"]
    (vllm,) = [e for e in header["run"]["engines"] if e["name"] == "vllm"]
    if shims.needed():  # an x86 CPU without Triton for CPUs: vLLM 0.34.0's platform refuses it unshimmed
        assert vllm["shims"] == [f"triton-cpu: {shims.NAMES['triton-cpu']}"]
        assert "vLLM's own code runs under an environment shim: triton-cpu" in SWEPT["stderr"]
        assert rows["llama"]["extras"]["shims"] == ["triton-cpu"]
        assert "shims: triton-cpu" in (SWEPT["out"] / "report.html").read_text()
    else:
        assert "shims" not in vllm


def test_serve_vllm_is_the_engines_whole_answer(served):
    import csv

    header, rows = served
    table = {row["model_type"]: row for row in csv.DictReader((SWEPT["out"] / "serve.csv").open())}
    assert table["llama"]["serve/vllm"] == "servable: native LlamaForCausalLM"
    assert table["llama"]["serve/vllm/path"] == "native LlamaForCausalLM"
    assert table["mixtral"]["serve/vllm/verdict"] == "undecided" and table["mixtral"]["serve/vllm/fault"] == "environment"
    assert table["t5"]["serve/vllm"] == f"stops at serves/vllm: {rows['t5']['message']}"
    native = sum(1 for r in rows.values() if r["status"] == "build" and r["extras"]["impl"] == "native")
    served_types = sum(1 for r in rows.values() if r["status"] == "build")
    version = next(e["version"] for e in header["run"]["engines"] if e["name"] == "vllm")
    assert (f"vLLM {version} (own code, native or Transformers backend) would serve {served_types} of {len(TYPES)} "
            f"model types ({native} native, {served_types - native} by the Transformers backend") in SWEPT["stderr"]
