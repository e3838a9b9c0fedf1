"""The `weights` check's SGLang row (`weights/sglang`) under SGLang's own model loader: its
DefaultModelLoader with load_format="safetensors" on the meta device, the Transformers backend's
own load_weights fed meta tensors of the safetensors headers (auditor/engines/sglang/loading.py).
Real SGLang, real checkpoints: the tiny ones the check saves with this transformers'
save_pretrained, and sparse checkpoint folders (real headers, no data) of a small Llama, changed
the ways a checkpoint goes wrong. One sweep for the module. Needs SGLang (its venv)."""

from __future__ import annotations

import pytest

from tests.checks.checkpoint_files import changed_checkpoints, sweep_weights

pytest.importorskip("sglang", reason="SGLang is not installed (scripts/install_sglang.sh): its own loader needs it")
pytestmark = pytest.mark.slow

TYPES = ("llama", "mixtral")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from transformers import LlamaConfig

    root = tmp_path_factory.mktemp("sglang-weights")
    config = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=1024, architectures=["LlamaForCausalLM"],
                         dtype="bfloat16", tie_word_embeddings=False)
    folders = changed_checkpoints(root, config, extra="model.layers.1.mlp.extra_proj.weight",
                                  lacking="model.layers.2.self_attn.o_proj.weight", shards=2)
    return sweep_weights(root, TYPES, folders, "sglang")


def test_sglang_places_every_tensor_of_a_tiny_checkpoint_and_a_header_on_meta(loaded):
    sglang, _ = loaded
    for name in ("llama", "whole"):  # whole: the small Llama's headers
        row = sglang[name]
        assert row["status"] == "loaded", row
        assert row["message"].startswith("SGLang's loader placed every tensor: Transformers backend")
        assert row["extras"]["data_read"].startswith("none")
        # SGLang's processing after loading refuses the meta device: about devices, not names, and said so
        assert "process_device cannot be meta" in row["extras"]["not_run"]
    assert sglang["whole"]["extras"]["tensors"] == 39


def test_a_name_sglang_cannot_map_is_keys_with_sglangs_file_and_line(loaded):
    sglang, _ = loaded
    extra = sglang["extra"]
    assert extra["status"] == "keys" and extra["fault"] == "engine", extra
    assert "layers.1.mlp.extra_proj" in extra["message"]
    assert extra["extras"]["raised_at"].startswith("sglang/srt/")
    # SGLang's Transformers backend and what this transformers saves for mixtral
    mixtral = sglang["mixtral"]
    assert mixtral["status"] == "keys" and mixtral["extras"]["raised_at"].startswith("sglang/srt/"), mixtral


def test_a_weight_the_checkpoint_lacks_is_named_though_sglang_checks_nothing_of_it(loaded):
    sglang, transformers_rows = loaded
    lacking = sglang["lacking"]
    assert lacking["status"] == "keys", lacking
    assert lacking["extras"]["unset_parameters"] == ["model.layers.2.self_attn.o_proj.weight"]
    assert transformers_rows["lacking"]["extras"]["missing_keys"] == ["model.layers.2.self_attn.o_proj.weight"]
    assert lacking["fault"] == "model"  # the checkpoint lacks it: transformers says so too
