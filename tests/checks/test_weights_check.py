"""The `weights` check on real transformers: real save_pretrained and from_pretrained, real
safetensors files, the real CLI and workers.

Across releases the check compares a checkpoint saved by one transformers with what another
loads (upgrade-check's two venvs: tests/upgrade). Here both runs use this transformers, and the
saved folders are changed between them the way a release's changes show up (a renamed key, a
config its new validation refuses, a type it lost, another forward): each verdict is what
the real loading of the changed folder gives, not one the test writes down.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.checks.checkpoint_files import llama_70b, model_tensors, write_checkpoint, write_sparse_safetensors
from tests.conftest import by_type, read_rows, run_auditor, run_auditors

SAVED = ["llama", "gpt2", "gpt_neo", "cpmant", "vit", "wav2vec2"]  # the last two fed no token ids
# Saved too, with no outputs to compare: mllama's own auto class cannot load what its class saves;
# clip takes pixel values, not the check's token ids.
UNCOMPARED = ["mllama", "clip"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One sweep saving the weights check's checkpoints of SAVED (a round trip in this release)."""
    root = tmp_path_factory.mktemp("weights")
    proc = run_auditor("sweep", "--models", ",".join(SAVED + UNCOMPARED), "--checks", "build,weights",
                       "--weights-save", str(root / "saved"), "-o", str(root / "run"), "-j", "2")
    assert proc.returncode == 0, proc.stderr
    return root


def _changed(saved_root: Path) -> Path:
    """A copy of the saved checkpoints, each changed as a release's change would show."""
    import torch
    from safetensors.torch import load_file, save_file

    folder = saved_root / "changed"
    shutil.copytree(saved_root / "saved", folder)
    # llama: the outputs saved differ from what its weights give (as when a release changes the math).
    reference = load_file(str(folder / "llama" / "auditor-reference" / "tensors.safetensors"))
    reference["output"] = reference["output"] + 0.5
    save_file(reference, str(folder / "llama" / "auditor-reference" / "tensors.safetensors"))
    # gpt2: a weight saved under a name this release does not load (a rename without a conversion rule).
    weights = load_file(str(folder / "gpt2" / "model.safetensors"))
    weights["transformer.h.0.mlp.c_fc.renamed"] = weights.pop("transformer.h.0.mlp.c_fc.weight")
    save_file(weights, str(folder / "gpt2" / "model.safetensors"), metadata={"format": "pt"})
    # gpt_neo: a saved config its class's validation refuses (num_layers against attention_types).
    config = json.loads((folder / "gpt_neo" / "config.json").read_text())
    config["num_layers"] += 1
    (folder / "gpt_neo" / "config.json").write_text(json.dumps(config))
    # cpmant: an input the model cannot take (a token id past its vocabulary): its forward raises.
    reference = load_file(str(folder / "cpmant" / "auditor-reference" / "tensors.safetensors"))
    reference["input.input_ids"] = torch.full_like(reference["input.input_ids"], 10**6)
    save_file(reference, str(folder / "cpmant" / "auditor-reference" / "tensors.safetensors"))
    # A type this release does not have, saved by "another" one: llama's folder under another type.
    shutil.copytree(folder / "llama", folder / "auditor_gone")
    config = json.loads((folder / "auditor_gone" / "config.json").read_text())
    (folder / "auditor_gone" / "config.json").write_text(json.dumps({**config, "model_type": "auditor_gone"}))
    return folder


@pytest.fixture(scope="module")
def compared(saved):
    """The unchanged and the changed folders loaded again, in two sweeps side by side."""
    changed = _changed(saved)
    outs = [saved / "same", saved / "compared"]
    common = ["sweep", "--checks", "build,weights", "--allow-absent", "-j", "1"]
    procs = run_auditors([
        [*common, "--models", ",".join(SAVED), "--weights-from", str(saved / "saved"), "-o", str(outs[0])],
        # opt: a type nothing was saved for.
        [*common, "--models", ",".join([*SAVED, "auditor_gone", "opt"]), "--weights-from", str(changed),
         "-o", str(outs[1])],
    ])
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
    return [by_type(read_rows(out)[1], "weights") for out in outs]


def test_a_save_and_a_load_of_one_release_agree(saved):
    rows = by_type(read_rows(saved / "run")[1], "weights")
    assert {t: rows[t]["status"] for t in SAVED} == dict.fromkeys(SAVED, "same")
    assert rows["llama"]["extras"]["model_class"] == "LlamaForCausalLM"  # the head is saved and loaded too
    assert "atol" in rows["llama"]["message"] and rows["llama"]["extras"]["max_abs_diff"] == 0
    for model_type in SAVED:
        folder = saved / "saved" / model_type
        assert (folder / "model.safetensors").is_file() and (folder / "auditor-reference.json").is_file()
    # gpt_neo's local attention window cut below the input, so the saved outputs went through it
    assert rows["gpt_neo"]["extras"]["exercised"] == {"window_size": [256, 16]}
    assert "exercised" not in rows["llama"]["extras"]  # nothing of llama's is longer than the input
    # the forward a user's call makes: the model's own defaults, its cache on (no use_cache=False)
    info = json.loads((saved / "saved" / "llama" / "auditor-reference.json").read_text())
    assert info["kwargs"] == {} and rows["llama"]["extras"]["input"] == "64 seeded tokens (seed 0), float32, cpu"
    # a model whose main input is not token ids: fed its own (pixel values, a waveform), named on the row
    assert rows["vit"]["extras"]["input"].startswith("seeded pixel_values 1x3x")
    assert rows["wav2vec2"]["extras"]["input"] == "seeded input_values 1x4000 (seed 0), float32, cpu"


def test_a_forward_that_raises_with_its_cache_on_is_compared_with_it_off():
    # A real module standing in for a model whose first forward raises with its cache on (no
    # model of this transformers does: under 4.57.6 recurrent_gemma and doge differ with it).
    import torch
    from transformers.modeling_outputs import CausalLMOutput

    from auditor.checks.weights import _reference_forward

    class CacheRaises(torch.nn.Module):
        def forward(self, input_ids, use_cache=True):
            if use_cache:
                raise RuntimeError("no cache here")
            return CausalLMOutput(logits=input_ids.float())

    ids = torch.arange(4)[None]
    output, feed = _reference_forward(CacheRaises(), {"input_ids": ids, "use_cache": False})
    assert feed == {"input_ids": ids, "use_cache": False} and torch.equal(output, ids.float())
    output, feed = _reference_forward(CacheRaises(), {"input_ids": ids})  # no use_cache to fall back on
    assert isinstance(output, RuntimeError) and "no cache here" in str(output)


def test_the_input_reaches_every_window_and_block_a_full_size_model_runs():
    import transformers

    from auditor.checks.weights import LENGTH
    from auditor.models.tiny import shrink
    from auditor.models.tiny.exercise import exercised

    # recurrent_gemma's blocks repeat (recurrent, recurrent, attention): two shrunk layers never
    # reach its attention block, whose window (2048) the input would not reach either.
    config, changed = exercised(shrink(transformers.AutoConfig.for_model("recurrent_gemma")), LENGTH)
    assert changed == {"attention_window_size": (2048, LENGTH // 4), "num_hidden_layers": (2, 3)}
    assert config.attention_window_size == LENGTH // 4 and config.num_hidden_layers == 3
    # a sub-config's window too (gemma3's text config)
    _, changed = exercised(shrink(transformers.AutoConfig.for_model("gemma3")), LENGTH)
    assert changed == {"text_config.sliding_window": (4096, LENGTH // 4)}


def test_the_saved_checkpoints_load_the_same_in_another_run(compared):
    same = compared[0]
    assert {t: same[t]["status"] for t in SAVED} == dict.fromkeys(SAVED, "same")
    assert "saved under transformers" in same["gpt2"]["message"]


def test_each_change_gets_its_verdict_with_what_and_where(compared):
    rows = compared[1]
    llama = rows["llama"]
    assert llama["status"] == "different-outputs" and llama["fault"] == "model"
    assert llama["extras"]["max_abs_diff"] == pytest.approx(0.5, abs=1e-4)
    assert "max abs diff 0.5" in llama["message"] and "rtol" in llama["message"]
    gpt2 = rows["gpt2"]
    assert gpt2["status"] == "keys"
    assert "transformer.h.0.mlp.c_fc.weight" in gpt2["extras"]["missing_keys"]
    assert "transformer.h.0.mlp.c_fc.renamed" in gpt2["extras"]["unexpected_keys"]
    assert "1 missing (transformer.h.0.mlp.c_fc.weight)" in gpt2["message"]
    neo = rows["gpt_neo"]
    assert neo["status"] == "config-refused" and "num_layers" in neo["message"]
    assert "[raised at " in neo["message"]  # in the config's own validation (huggingface_hub's strict dataclass)
    cpmant = rows["cpmant"]
    assert cpmant["status"] == "forward-error" and "[raised at " in cpmant["message"]
    gone = rows["auditor_gone"]
    assert gone["status"] == "type-removed" and "auditor_gone" in gone["message"]


def test_a_release_that_cannot_load_its_own_save_or_run_the_input_says_which(saved):
    rows = by_type(read_rows(saved / "run")[1], "weights")
    mllama = rows["mllama"]
    # mllama is a type of this release: not `type-removed`, but a load its own save cannot make
    assert mllama["status"] == "load-error" and mllama["fault"] == "model", mllama
    assert "AutoModelForCausalLM cannot load what MllamaForCausalLM saved" in mllama["message"]
    assert "MllamaTextConfig" in mllama["message"] and "[raised at " in mllama["message"]
    clip = rows["clip"]  # the check's input is not one the model takes: no verdict of the model's
    assert clip["status"] == "skipped" and "no outputs to compare on" in clip["message"], clip


def test_a_type_with_nothing_saved_is_skipped_and_says_so(compared):
    row = compared[1]["opt"]
    assert row["status"] == "skipped" and "no checkpoint saved" in row["message"]


# -- the user's own checkpoints: safetensors headers only ---------------------------------------


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Checkpoint folders (sparse files: real headers, no data) and one sweep over all of them."""
    root = tmp_path_factory.mktemp("checkpoints")
    config = llama_70b()
    tensors = model_tensors(config)
    big = write_checkpoint(root / "llama-70b", config, tensors, shards=4)
    lacking = dict(tensors)
    del lacking["model.layers.7.mlp.down_proj.weight"]
    lacking["model.layers.7.mlp.down_proj.weight_scale"] = ((1,), "float32")
    write_checkpoint(root / "lacking", config, lacking)
    reshaped = dict(tensors)
    reshaped["model.embed_tokens.weight"] = ((128000, 8192), "bfloat16")
    write_checkpoint(root / "reshaped", config, reshaped)
    # A Hugging Face cache folder: a good snapshot, one without config.json, one not safetensors, one cut short.
    repo = root / "hub" / "models--acme--llama-70b" / "snapshots"
    write_checkpoint(repo / "0123456789abcdef", config, tensors)
    (repo / "noconfig").mkdir(parents=True)
    write_sparse_safetensors(repo / "noconfig" / "model.safetensors", {"x": ((2,), "float32")})
    notst = write_checkpoint(repo / "notsafetensors", config, {})
    (notst / "model.safetensors").write_bytes(b"PK\x03\x04 this is a zip, not safetensors" * 4)
    cut = write_checkpoint(repo / "truncated", config, tensors)
    with open(cut / "model.safetensors", "r+b") as handle:
        handle.truncate(1_000_000)
    out = root / "run"
    proc = run_auditor("sweep", "--checkpoint", str(big), "--checkpoint", str(root / "lacking"),
                       "--checkpoint", str(root / "reshaped"), "--checkpoint", str(root / "hub"),
                       "--checks", "build,weights", "-o", str(out), "-j", "2")
    assert proc.returncode == 0, proc.stderr
    return root, read_rows(out)[1]


def test_a_70b_checkpoint_is_mapped_from_its_headers_alone(checkpoints):
    root, rows = checkpoints
    weights = by_type(rows, "weights")["llama-70b"]
    assert weights["status"] == "loaded", weights
    assert weights["extras"]["model_class"] == "LlamaForCausalLM" and weights["extras"]["tensors"] == 723
    build = by_type(rows, "build")["llama-70b"]
    assert build["status"] == "build" and build["extras"]["parameters"] > 69e9  # its real config, full size
    # The data is a hole: what decided the verdict can only have been the headers.
    on_disk = sum(p.stat().st_blocks * 512 for p in (root / "llama-70b").glob("*.safetensors"))
    apparent = sum(p.stat().st_size for p in (root / "llama-70b").glob("*.safetensors"))
    assert apparent > 130e9 and on_disk < 10e6


def test_a_header_lacking_a_tensor_or_naming_another_is_keys_with_the_names(checkpoints):
    rows = by_type(checkpoints[1], "weights")
    lacking = rows["lacking"]
    assert lacking["status"] == "keys"
    assert lacking["extras"]["missing_keys"] == ["model.layers.7.mlp.down_proj.weight"]
    assert lacking["extras"]["unexpected_keys"] == ["model.layers.7.mlp.down_proj.weight_scale"]
    reshaped = rows["reshaped"]
    assert reshaped["status"] == "keys"
    assert reshaped["extras"]["mismatched_keys"] == [["model.embed_tokens.weight", [128000, 8192], [128256, 8192]]]


def test_a_cache_folder_gives_a_row_per_snapshot_and_bad_ones_say_why(checkpoints):
    weights = by_type(checkpoints[1], "weights")
    assert weights["acme/llama-70b@0123456789ab"]["status"] == "loaded"
    noconfig = weights["acme/llama-70b@noconfig"]
    assert noconfig["status"] == "config-refused" and "no config.json" in noconfig["message"]
    notst = weights["acme/llama-70b@notsafetenso"]
    assert notst["status"] == "load-error" and "not a safetensors file" in notst["message"]
    cut = weights["acme/llama-70b@truncated"]
    assert cut["status"] == "load-error" and "truncated" in cut["message"]


@pytest.mark.parametrize("make, words", [
    (lambda p: p, "no such folder"),
    (lambda p: (p.mkdir(), p)[1], "no config.json or safetensors in it"),
])
def test_a_folder_that_is_no_checkpoint_exits_2_before_any_work(tmp_path, make, words):
    folder = make(tmp_path / "nothing")
    proc = run_auditor("sweep", "--checkpoint", str(folder), "--checks", "weights", "-o", str(tmp_path / "run"))
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_a_checkpoint_rows_repro_command_sweeps_that_row_again(checkpoints, tmp_path):
    import shlex

    from auditor.core.repro import sweep_command
    from auditor.core.results import read_run

    root, _ = checkpoints
    command = sweep_command("lacking", "weights", read_run(root / "run").info.repeat)
    assert f"--checkpoint {root / 'lacking'}" in command
    proc = run_auditor(*shlex.split(command)[1:], "-o", str(tmp_path / "again"), "-j", "1")
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(tmp_path / "again")[1]
    assert {(r["model_type"], r["check"], r["status"]) for r in rows} == {("lacking", "weights", "keys")}


def test_a_window_its_config_derives_again_on_loading_is_left_as_it_was():
    # As transformers 4.57.6's ModernBertDecoderConfig does: `sliding_window` made in __init__ from
    # `local_attention`, so a cut of it alone would not be what from_pretrained reads back (the
    # saved and the loaded model would run different windows: a difference of the auditor's making).
    from transformers import PretrainedConfig

    from auditor.checks.weights import LENGTH
    from auditor.models.tiny.exercise import as_saved, exercised

    class Derived(PretrainedConfig):
        model_type = "auditor_derived_window"

        def __init__(self, local_attention=128, attention_window_size=512, **kwargs):
            super().__init__(**kwargs)
            self.local_attention = local_attention
            self.sliding_window = local_attention // 2
            self.attention_window_size = attention_window_size

    config, changed = as_saved(*exercised(Derived(), LENGTH))
    assert changed == {"attention_window_size": (512, 16)}  # kept: __init__ takes it as it is
    assert config.sliding_window == 64 and config.attention_window_size == 16
