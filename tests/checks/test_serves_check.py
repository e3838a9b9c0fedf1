"""The `serves` check without an engine to answer: refused before any work (its install hint),
and the architecture each type is given, as vLLM's own initialization test gives one per type.
Its rows under vLLM are tests/engines/test_vllm_native.py."""

from __future__ import annotations

import importlib.util

import pytest

from auditor.engines.vllm.native import architecture_for
from tests.conftest import run_auditor


def test_each_type_gets_its_causal_lm_architecture_else_a_generative_one_else_its_automodel():
    assert architecture_for("llama") == ("LlamaForCausalLM", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES")
    assert architecture_for("gpt2")[0] == "GPT2LMHeadModel"
    assert architecture_for("llava") == ("LlavaForConditionalGeneration", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES")
    assert architecture_for("t5") == ("T5Model", "MODEL_MAPPING_NAMES")
    assert architecture_for("funnel")[0] == "FunnelModel"  # a type of two AutoModel classes: the first
    assert architecture_for("no-such-type") == ("", "")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here: the check runs")
def test_without_vllm_the_check_is_refused_before_any_work(tmp_path):
    run = run_auditor("sweep", "--models", "llama", "--checks", "serves", "-o", str(tmp_path / "out"))
    assert run.returncode == 2
    assert "check 'serves' needs vllm installed" in run.stderr and "model-sweep-auditor[vllm]" in run.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
