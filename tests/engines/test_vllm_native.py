"""The `serves` check under vLLM's own get_model(model_impl="auto"): which class vLLM picks for
a type (native or the Transformers backend), whether it constructs, and this machine's limits
apart (the meta device), or stood in for by a named shim (a kernel the CUDA wheel lacks on a CPU,
whose result the meta device never needs). One sweep for the module, in a process of its own. Needs vLLM (run with VLLM_TARGET_DEVICE=cpu on a CPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import read_rows, run_auditor

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'): its own "
                                   "get_model needs it")
pytestmark = pytest.mark.slow

TYPES = ("llama", "gemma", "mixtral", "llava", "bloom", "t5", "videoprism")
SWEPT: dict = {}  # the module's sweep: its run directory and what it printed


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = tmp_path_factory.mktemp("serves") / "run"
    # `--engine vllm`: the vLLM installed here, in this sweep (its serves check and policy added),
    # with VLLM_TARGET_DEVICE unset, as a user has it: on a machine where vLLM's own detection
    # finds no platform the sweep sets it (the `cpu-target` shim)
    run = run_auditor("sweep", "--engine", "vllm", "--models", ",".join(TYPES), "--checks", "serves",
                      "-o", str(out), env={"VLLM_TARGET_DEVICE": None, "AUDITOR_VLLM_CPU_TARGET": None})
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


def test_what_the_meta_device_cannot_finish_is_built_from_its_tiny_config_on_the_cpu_and_the_row_says_so(served):
    _, rows = served
    bloom = rows["bloom"]  # its ALiBi slopes are copied out of a tensor at construction: not on meta
    assert bloom["status"] == "build" and bloom["message"] == "servable: native BloomForCausalLM"
    assert bloom["extras"]["built_on"] == "cpu, from its tiny config (the meta device cannot finish it)"
    assert "meta tensor" in bloom["extras"]["meta_limit"].lower()
    assert "built_on" not in rows["llama"]["extras"]


def no_platform_detected() -> bool:
    """vLLM's own platform detection, with VLLM_TARGET_DEVICE unset, finds none (its CUDA wheel without a GPU)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_TARGET_DEVICE", "AUDITOR_VLLM_CPU_TARGET")}
    proc = subprocess.run([sys.executable, "-c", "import vllm.platforms as p; print(p.resolve_current_platform_cls_qualname())"],
                          env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip().endswith(".UnspecifiedPlatform")


def kernel_shims_here() -> bool:
    from auditor.engines.vllm import shims

    return shims.MOE_PREPACK in shims.needed()


@pytest.mark.skipif(not kernel_shims_here(), reason="vLLM's own CPU kernels are here: no kernel shim stands in")
def test_a_kernel_the_meta_device_never_needs_is_a_named_shim_and_the_row_says_what_was_not_run(served):
    _, rows = served
    # MoE: vLLM's CPU experts pack the (meta) weights after the dummy load; the packing is stood in for
    mixtral = rows["mixtral"]
    assert mixtral["status"] == "build" and mixtral["message"] == "servable: native MixtralForCausalLM"
    assert "moe-prepack" in mixtral["extras"]["shims"] and "packing" in mixtral["extras"]["not_run"]
    # vision-language: QuickGELU's kernel handle, taken at construction and never called on x86;
    # its processor files written offline, as a checkpoint has them
    llava = rows["llava"]
    assert llava["status"] == "build" and llava["message"] == "servable: native LlavaForConditionalGeneration"
    assert "activation-ops" in llava["extras"]["shims"] and "moe-prepack" not in llava["extras"]["shims"]
    assert llava["extras"]["processor_files"].startswith("LlavaProcessor defaults")
    assert "activation-ops" not in rows["llama"]["extras"]["shims"]  # a row names only the shims it used


def test_a_stop_is_attributed_and_the_shims_are_named(served):
    header, rows = served
    t5 = rows["t5"]  # its AutoModel class through the backend: the decorator's positional lookup
    assert t5["status"] == "unsupported" and t5["fault"] == "engine"
    assert "not found in the forward method" in t5["message"]
    assert t5["extras"]["step"] == "constructor"  # vLLM's step: the where-they-stop table's row
    engines = {e["name"]: e for e in header["run"]["engines"]}
    assert engines["vllm"]["version"] != "emulated"
    for row in rows.values():
        assert row["extras"].get("engine_version", engines["vllm"]["version"]) == engines["vllm"]["version"]


def test_vllms_refusal_of_the_processor_class_written_beside_the_config_is_a_verdict_not_this_machines(served):
    _, rows = served
    videoprism = rows["videoprism"]  # written offline at its class's defaults, as a checkpoint ships it
    assert videoprism["extras"]["processor_files"].startswith("VideoPrismProcessor defaults")
    assert videoprism["status"] == "unsupported" and videoprism["fault"] != "environment"
    assert "VideoPrismProcessor exposes no image, video or audio processor" in videoprism["message"]


def test_the_engine_here_adds_its_policy_and_the_header_names_its_shims(served):
    from auditor.engines.vllm import shims

    header, rows = served
    assert "vllm" in header["run"]["experiment"]["policies"]
    (vllm,) = [e for e in header["run"]["engines"] if e["name"] == "vllm"]
    needed = dict(shims.needed())  # this process's (CI sets VLLM_TARGET_DEVICE=cpu for it)
    if no_platform_detected():  # the sweep ran with it unset: set by the auditor, and said so
        needed[shims.CPU_TARGET] = shims.NAMES[shims.CPU_TARGET]
        assert "vLLM's own code runs under an environment shim: cpu-target" in SWEPT["stderr"]
        assert "cpu-target" in rows["llama"]["extras"]["shims"] and rows["llama"]["status"] == "build"
    if needed:  # an x86 CPU without Triton for CPUs: vLLM 0.34.0's platform refuses it unshimmed
        assert vllm["shims"] == [f"{name}: {text}" for name, text in sorted(needed.items())]
        assert "vLLM's own code runs under an environment shim: triton-cpu" in SWEPT["stderr"]
        assert rows["llama"]["extras"]["shims"] == sorted({"triton-cpu", "cpu-target"} & set(needed))
        assert f"shims: {', '.join(sorted(needed))}" in (SWEPT["out"] / "report.html").read_text()
    else:
        assert "shims" not in vllm


def test_serve_vllm_is_the_engines_whole_answer(served):
    import csv

    header, rows = served
    table = {row["model_type"]: row for row in csv.DictReader((SWEPT["out"] / "serve.csv").open())}
    assert table["llama"]["serve/vllm"] == "servable: native LlamaForCausalLM"
    assert table["llama"]["serve/vllm/path"] == "native LlamaForCausalLM"
    assert table["bloom"]["serve/vllm"] == "servable: native BloomForCausalLM"
    assert table["t5"]["serve/vllm"] == f"stops at serves/vllm: {rows['t5']['message']}"
    native = sum(1 for r in rows.values() if r["status"] == "build" and r["extras"]["impl"] == "native")
    served_types = sum(1 for r in rows.values() if r["status"] == "build")
    version = next(e["version"] for e in header["run"]["engines"] if e["name"] == "vllm")
    assert (f"vLLM {version} (own code, native or Transformers backend) would serve {served_types} of {len(TYPES)} "
            f"model types ({native} native, {served_types - native} by the Transformers backend") in SWEPT["stderr"]
