"""The `weights` check's vLLM row (`weights/vllm`) under vLLM's own weight loader: get_model with
load_format="safetensors" on the meta device, its own load_weights fed meta tensors of the
safetensors headers (auditor/engines/vllm/loading.py). Real vLLM, real checkpoints: the tiny ones
the check saves with this transformers' save_pretrained, and sparse checkpoint folders (real
headers, no data) of a 70B Llama, changed the ways a checkpoint goes wrong. One sweep for the
module. Needs vLLM (run with VLLM_TARGET_DEVICE=cpu on a CPU)."""

from __future__ import annotations

import os

import pytest

from tests.checks.checkpoint_files import (
    changed_checkpoints,
    llama_70b,
    model_tensors,
    sweep_weights,
    write_checkpoint,
)

pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'model-sweep-auditor[vllm]'): its own "
                                   "weight loader needs it")
pytestmark = pytest.mark.slow

TYPES = ("llama", "olmo3", "deepseek_v3")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm-weights")
    config = llama_70b()
    folders = changed_checkpoints(root, config, extra="model.layers.3.mlp.extra_proj.weight",
                                  lacking="model.layers.7.self_attn.o_proj.weight", shards=4)
    reshaped = model_tensors(config)
    reshaped["model.layers.2.self_attn.o_proj.weight"] = ((8192, 4096), "bfloat16")
    folders["reshaped"] = write_checkpoint(root / "reshaped", config, reshaped)
    return sweep_weights(root, TYPES, folders, "vllm", jobs=2,
                         env={"VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE", "cpu")})


def test_vllm_loads_a_tiny_checkpoint_and_a_70b_header_on_the_meta_device(loaded):
    vllm, _ = loaded
    llama = vllm["llama"]
    assert llama["status"] == "loaded", llama
    assert llama["message"].startswith("vLLM's loader placed every tensor: native LlamaForCausalLM")
    assert llama["extras"]["data_read"].startswith("none") and llama["extras"]["engine_version"] == "0.34.0"
    big = vllm["whole"]  # the 70B Llama
    assert big["status"] == "loaded", big
    assert big["extras"]["tensors"] == 723 and big["extras"]["served"] == "LlamaForCausalLM"
    assert float(big["seconds"]) < 30  # vLLM builds 80 layers on meta; what it reads is 4 headers


def test_a_name_vllm_cannot_map_is_keys_with_vllms_file_and_line(loaded):
    vllm, _ = loaded
    extra = vllm["extra"]
    assert extra["status"] == "keys" and extra["fault"] == "engine", extra
    assert "layers.3.mlp.extra_proj" in extra["message"]
    assert extra["extras"]["raised_at"].startswith("vllm/model_executor/")
    assert extra["extras"]["step"] == "weights"
    # vLLM's own seam with this transformers: DeepseekV3Config no longer carries topk_method, vLLM's
    # deepseek_v2.py builds no e_score_correction_bias without it, and the checkpoint has one.
    deepseek = vllm["deepseek_v3"]
    assert deepseek["status"] == "keys" and "e_score_correction_bias" in deepseek["message"], deepseek
    assert deepseek["extras"]["raised_at"].startswith("vllm/model_executor/models/deepseek_v2.py:")


def test_a_weight_the_checkpoint_lacks_is_named_though_vllms_own_check_exempts_it(loaded):
    vllm, transformers_rows = loaded
    lacking = vllm["lacking"]
    assert lacking["status"] == "keys", lacking
    assert lacking["extras"]["unset_parameters"] == ["model.layers.7.self_attn.o_proj.weight"]
    # transformers finds the same key missing: the checkpoint's fault, not vLLM's mapping
    assert transformers_rows["lacking"]["extras"]["missing_keys"] == ["model.layers.7.self_attn.o_proj.weight"]
    assert lacking["fault"] == "model"
    reshaped = vllm["reshaped"]
    assert reshaped["status"] == "keys" and reshaped["extras"]["raised_at"].startswith("vllm/"), reshaped


def test_where_the_meta_device_stops_vllm_a_tiny_checkpoint_is_loaded_on_the_cpu(loaded):
    vllm, _ = loaded
    olmo3 = vllm["olmo3"]
    assert olmo3["status"] == "loaded", olmo3
    assert olmo3["extras"]["data_read"] == "the tiny checkpoint's, on the CPU"
    assert "meta tensor" in olmo3["extras"]["meta_limit"].lower()
