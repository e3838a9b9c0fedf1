"""The tokenizer check's engine rows (`tokenizer/vllm`, `tokenizer/sglang`): each engine's own
tokenizer loading (vLLM's and SGLang's get_tokenizer, as their servers call it on a local folder)
on the same files as transformers' AutoTokenizer, in the same process. Real engines, real files:
the tiny tokenizers the check makes and saves, and a user's Llama folder in the format the hub
holds (tests/checks/tokenizer_files.py). One sweep for the module, in whichever engine's venv
runs it (VLLM_TESTS and SGLANG_TESTS both list this file); skipped where neither is installed."""

from __future__ import annotations

import importlib.util

import pytest

from tests.checks.tokenizer_files import llama_folder
from tests.conftest import read_rows, run_auditor

ENGINES = [name for name in ("vllm", "sglang") if importlib.util.find_spec(name) is not None]
if not ENGINES:
    pytest.skip("neither vLLM nor SGLang is installed (scripts/install_vllm.sh, scripts/install_sglang.sh): "
                "their own tokenizer loading needs them", allow_module_level=True)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine-tokenizers")
    mine = llama_folder(root / "my-llama")
    proc = run_auditor("sweep", "--models", "llama,gpt2,bert,my-llama", "--checkpoint", str(mine),
                       "--checks", "tokenizer", "-o", str(root / "run"), "-j", "2",
                       env={"VLLM_TARGET_DEVICE": "cpu"})
    assert proc.returncode in (0, 1), proc.stderr
    return {(r["model_type"], r["component"]): r for r in read_rows(root / "run")[1] if r["check"] == "tokenizer"}


@pytest.mark.parametrize("engine", ENGINES)
def test_each_engine_loads_the_same_files_its_own_way_and_names_where(rows, engine):
    import importlib.metadata

    for model_type in ("llama", "gpt2", "bert", "my-llama"):
        row = rows[(model_type, engine)]
        assert row["status"] in ("same", "different-ids", "different-decode", "different-template"), row
        assert row["extras"]["engine_version"] == importlib.metadata.version(engine)
        assert row["extras"]["engine_class_at"].startswith(f"{engine}/"), row
    # A BPE and a WordPiece tokenizer read through the engine give what transformers gives.
    assert rows[("gpt2", engine)]["status"] == rows[("bert", engine)]["status"] == "same"


def test_vllm_serves_transformers_tokenizer_behind_its_cached_wrapper(rows):
    if "vllm" not in ENGINES:
        pytest.skip("vLLM is not installed")
    for model_type in ("llama", "gpt2", "my-llama"):
        row = rows[(model_type, "vllm")]
        assert row["status"] == "same", row
        assert row["extras"]["engine_class"].startswith("Cached")  # vllm/tokenizers/hf.py's wrapper
        assert row["extras"]["engine_class_at"].startswith("vllm/tokenizers/"), row


def test_sglang_adds_the_bos_that_transformers_5_no_longer_adds_and_it_is_the_engines_finding(rows):
    # SGLang's get_tokenizer restores v4's add_bos_token=True for a Llama tokenizer whose saved
    # tokenizer_config.json does not say it (its _fix_v5_add_bos_eos_token): transformers 5's
    # AutoTokenizer on the same files adds no <s>. The user's folder says add_bos_token, so both agree.
    if "sglang" not in ENGINES:
        pytest.skip("SGLang is not installed")
    llama = rows[("llama", "sglang")]
    assert (llama["status"], llama["fault"]) == ("different-ids", "engine"), llama
    assert llama["extras"]["after"].startswith("<s> ") and not llama["extras"]["before"].startswith("<s>")
    assert "[the engine's tokenizer: sglang/srt/utils/hf_transformers/tokenizer.py:" in llama["message"]
    assert rows[("my-llama", "sglang")]["status"] == "same"
