"""The `tokenizer` check on real transformers: real tiny vocabularies (sentencepiece, byte-level BPE,
WordPiece), real save_pretrained and from_pretrained, the real CLI and workers.

Across releases (4.57.6 saving, 5.0.0 loading) it runs in upgrade-check's two venvs
(tests/upgrade/test_upgrade_real.py, with the two real-format folders of tokenizer_files.py). Here
both runs use this transformers: a save and a load of one release, then saved folders changed the
way a release's changes show up (a file the loading side lacks a package for, a saved class this
release does not have, a record made by another pipeline): each verdict is what the real loading
gives.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.checks.tokenizer import RECORD
from tests.checks.tokenizer_files import byte_level_folder, llama_folder
from tests.conftest import auditor_env, read_rows, run_auditors

TYPES = ["llama", "gpt2", "bert", "t5", "pegasus", "xlnet", "whisper"]


def _rows(out: Path) -> dict[tuple[str, str], dict]:
    return {(r["model_type"], r["component"]): r for r in read_rows(out)[1] if r["check"] == "tokenizer"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three sweeps side by side: the types saved; the user's two folders saved; then both loaded
    again from what was saved (the second after the saved folders were changed)."""
    root = tmp_path_factory.mktemp("tokenizer")
    folders = [llama_folder(root / "mine" / "my-llama"), byte_level_folder(root / "mine" / "my-bpe")]
    mine = [arg for folder in folders for arg in ("--checkpoint", str(folder))]
    saving = run_auditors([
        ["sweep", "--models", ",".join(TYPES), "--checks", "tokenizer", "--weights-save", str(root / "saved"),
         "-o", str(root / "save"), "-j", "2"],
        ["sweep", *mine, "--checks", "tokenizer", "--weights-save", str(root / "saved-mine"), "-o",
         str(root / "save-mine"), "-j", "1"],
    ])
    for proc in saving:
        assert proc.returncode in (0, 1), proc.stderr
    changed = root / "changed"
    shutil.copytree(root / "saved", changed)
    # gpt2: a record another pipeline made ("Hello world" once tokenized otherwise).
    record_path = changed / "gpt2" / "tokenizer" / RECORD
    info = json.loads(record_path.read_text())
    for how in ("auto", "named"):
        first = info[how]["texts"][0]
        first["ids"], first["tokens"] = first["ids"][::-1], first["tokens"][::-1]
    record_path.write_text(json.dumps(info))
    # bert: saved by a release whose class this one lacks (the class named in the record and config).
    for name in (RECORD, "tokenizer_config.json"):
        path = changed / "bert" / "tokenizer" / name
        path.write_text(path.read_text().replace("BertTokenizer", "AuditorGoneTokenizer"))
    # whisper: its feature extractor's saved log-mel features as another release computed them.
    from safetensors.numpy import load_file, save_file

    outputs_path = changed / "whisper" / "feature-extractor" / "auditor-processor.safetensors"
    outputs = load_file(str(outputs_path))
    outputs["input_features"][0, 5, 7] += 0.25
    save_file(outputs, str(outputs_path))
    loading = run_auditors([
        ["sweep", "--models", ",".join(TYPES), "--checks", "tokenizer", "--weights-from", str(root / "saved"),
         "-o", str(root / "load"), "-j", "2"],
        ["sweep", "--models", "gpt2,bert,whisper", "--checks", "tokenizer", "--weights-from", str(changed),
         "-o", str(root / "changed-load"), "-j", "1"],
        ["sweep", *mine, "--checks", "tokenizer", "--weights-from", str(root / "saved-mine"), "-o",
         str(root / "load-mine"), "-j", "1"],
    ])
    for proc in loading:
        assert proc.returncode in (0, 1), proc.stderr
    return root


def test_a_save_and_a_load_of_one_release_agree_class_by_class(runs):
    saved, loaded = _rows(runs / "save"), _rows(runs / "load")
    for rows in (saved, loaded):
        ok = {key: row["status"] for key, row in rows.items() if key[0] != "pegasus"}
        assert set(ok.values()) == {"same"}, ok
    assert loaded[("gpt2", "")]["extras"]["saved_by"] == saved[("gpt2", "")]["extras"]["saved_by"]
    assert loaded[("llama", "")]["message"].endswith("the same ids, decode and chat template")
    # What the classes saved is real: T5's unigram (trained by sentencepiece), WordPiece's vocab.txt.
    t5 = json.loads((runs / "saved" / "t5" / "tokenizer" / "tokenizer.json").read_text())
    assert t5["model"]["type"] == "Unigram" and len(t5["model"]["vocab"]) > 100
    bert = json.loads((runs / "saved" / "bert" / "tokenizer" / "tokenizer.json").read_text())
    assert bert["model"]["type"] == "WordPiece" and "[CLS]" in bert["model"]["vocab"]


def test_a_class_that_cannot_take_its_own_vocabulary_is_a_load_error_with_where(runs):
    # transformers 5's PegasusTokenizer refuses a unigram vocabulary whose <unk> is not scored 0.0
    # (the "('<unk>', 0.0) is not in list"), raised in its own code.
    row = _rows(runs / "save")[("pegasus", "")]
    assert row["status"] == "load-error", row
    assert "raised at transformers/models/pegasus/tokenization_pegasus.py:" in row["message"]
    assert row["fault"] == "model"


def test_each_change_gets_its_verdict_with_one_example(runs):
    rows = _rows(runs / "changed-load")
    gpt2 = rows[("gpt2", "")]
    assert gpt2["status"] == "different-ids", gpt2
    assert gpt2["extras"]["text"] == "Hello world" and gpt2["extras"]["texts_differing"] == 1
    assert gpt2["extras"]["before"] != gpt2["extras"]["after"]
    assert "'Hello␣world'" in gpt2["message"] and "->" in gpt2["message"]
    bert = rows[("bert", "")]
    assert bert["status"] == "class-removed", bert
    assert "AuditorGoneTokenizer is not in this release" in bert["message"]


def test_a_processor_is_saved_with_its_outputs_and_compared_by_value(runs):
    saved, loaded = _rows(runs / "save"), _rows(runs / "load")
    for rows in (saved, loaded):
        row = rows[("whisper", "feature-extractor")]
        assert row["status"] == "same" and row["extras"]["class"] == "WhisperFeatureExtractor", row
    changed = _rows(runs / "changed-load")[("whisper", "feature-extractor")]
    assert changed["status"] == "different-outputs", changed
    assert "input_features differs, max abs diff 0.25" in changed["message"]
    assert changed["extras"]["max_abs_diff"] == pytest.approx(0.25, abs=1e-3)


def test_a_users_tokenizer_is_recorded_with_its_own_template_and_loaded_again(runs):
    saved, loaded = _rows(runs / "save-mine"), _rows(runs / "load-mine")
    assert {key[0] for key in saved} == {"my-llama", "my-bpe"}
    assert {row["status"] for row in [*saved.values(), *loaded.values()]} == {"same"}, loaded
    record = json.loads((runs / "saved-mine" / "checkpoints" / "my-llama" / "tokenizer" / RECORD).read_text())
    assert record["record"]["template"]["rendered"].startswith("<s>[system] You are terse.</s>")
    assert record["class"] == "LlamaTokenizer" and record["source"].endswith("my-llama")


def test_without_sentencepiece_a_slow_save_needs_sentencepiece_not_tiktoken(runs, tmp_path):
    # The slow save: the Llama folder without its tokenizer.json, recorded by the sweep above with
    # sentencepiece; loaded again in a process where sentencepiece is absent. Absent by making its
    # import fail (sys.modules[name] = None, as for a package not installed): this machine's venv has it,
    # and the tests cannot uninstall it from under the other tests.
    slow = tmp_path / "slow"
    shutil.copytree(runs / "mine" / "my-llama", slow)
    (slow / "tokenizer.json").unlink()
    config = json.loads((slow / "tokenizer_config.json").read_text())
    (slow / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "LlamaTokenizer"}))
    code = ("import sys, json; sys.modules['sentencepiece'] = None\n"
            "from pathlib import Path\nfrom auditor.checks.tokenizer import compare\n"
            f"out = compare(Path({str(runs / 'saved-mine' / 'checkpoints' / 'my-llama' / 'tokenizer')!r}), "
            f"Path({str(slow)!r}))\n"
            "print(json.dumps([out.status.value, out.message, out.fault.value]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=auditor_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    status, message, fault = json.loads(proc.stdout.splitlines()[-1])
    assert (status, fault) == ("needs-package", "environment"), message
    assert message.startswith("needs sentencepiece: the saved files need it")
    assert "tiktoken" in message  # transformers' own, misleading words stay on the row, after ours
