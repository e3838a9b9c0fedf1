"""The `serves` check without an engine to answer: refused before any work (its install hint),
and the architecture each type is given, as vLLM's own initialization test gives one per type.
Its rows under vLLM are tests/engines/test_vllm_native.py."""

from __future__ import annotations

import importlib.util

import pytest

from auditor.core.hints import install_hint
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
    assert "check 'serves' needs vllm installed" in run.stderr and install_hint("vllm") in run.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed: no engine answers")
def test_a_dead_workers_rows_land_in_the_engines_cell():
    """What the pool writes when a worker dies in the serves check (an oom, a timeout) claims the
    cell `run` fills, serves/vllm: so its rerun's row is the same cell's (jetmoe's oom rerun alone
    was dropped before, and the death stood in a column of its own, `serves`)."""
    from auditor.checks import Options, get
    from auditor.core.status import Failure, Status
    from auditor.models.cases import discover

    case = next(c for c in discover() if c.model_type == "llama")
    rows = get("serves").failed_rows(case, Options(policies=("vllm",), checks=("serves",)), Failure.because(Status.OOM, "OutOfMemory"))
    assert [(r.check, r.component, r.status) for r in rows] == [("serves", "vllm", Status.OOM)]
