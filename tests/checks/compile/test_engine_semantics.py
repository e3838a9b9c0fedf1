"""The compile check under an engine's semantics (vLLM: guards dropped, the first graph reused at
every length, position ids passed, the engine's gates first), against plain `torch.compile`.

In process, on real tiny models built by the auditor (real transformers, real dynamo, the plugin
types of plugin_models.py that misbehave on purpose): the same `compile_component` a sweep's
worker calls, without a worker's startup per case. The sweep-level default is checked at the end.
"""

import pytest
import torch

import tests.checks.compile.plugin_models  # noqa: F401  (registers the auditor_compile_* types)
from auditor import engines
from auditor.checks.compile import engine_stop
from auditor.checks.compile_trial import compile_component
from auditor.checks.interface import CaseContext, Options
from auditor.models.cases import ModelCase
from auditor.models.components import find_components
from auditor.models.meta import make_config
from auditor.models.tiny import tiny_model
from tests.conftest import read_rows, run_auditor


def _outcome(model_type: str, semantics: str = "vllm"):
    tiny = tiny_model(make_config(model_type), "cpu")
    component = find_components(tiny.model).items[0]
    options = Options(policies=("fixed",), checks=("compile",), backend="eager", compile_semantics=semantics)
    try:
        return compile_component(tiny.config, component, options, engines.compile_semantics(semantics))
    finally:
        torch._dynamo.reset()


def test_vllm_compiles_once_and_reuses_the_graph_at_three_lengths():
    outcome = _outcome("auditor_compile_ok")
    assert outcome.status == "compiled", outcome
    assert outcome.extras["sizes"] == [7, 13, 29] and outcome.extras["graphs"] == 1
    assert outcome.extras["run_2_seconds"] > 0  # the third length ran on the first graph


def test_a_graph_specialized_to_the_first_length_gives_another_output_later():
    # Plain torch.compile recompiles here (a cost); vLLM reuses the graph of length 7 at 13: wrong.
    assert _outcome("auditor_compile_specialize", "plain").status == "recompiled"
    outcome = _outcome("auditor_compile_specialize")
    assert outcome.status == "specialized", outcome
    assert (outcome.extras["failed_at"], outcome.extras["failure"], outcome.extras["graphs"]) == (13, "differed", 1)
    assert "compiled at length 7 gave another output at length 13" in outcome.message


def test_a_graph_specialized_to_the_first_length_crashes_later():
    assert _outcome("auditor_compile_crash", "plain").status == "recompiled"
    outcome = _outcome("auditor_compile_crash")
    assert outcome.status == "specialized", outcome
    assert (outcome.extras["failed_at"], outcome.extras["failure"]) == (13, "crashed")
    assert "compiled at length 7 crashed at length 13" in outcome.message and "must match" in outcome.message


def test_a_graph_break_and_a_mismatch_are_the_same_under_both_semantics():
    for semantics in ("vllm", "plain"):
        assert _outcome("auditor_compile_break", semantics).status == "graph-break"
        assert _outcome("auditor_compile_mismatch", semantics).status == "mismatch"


def test_a_real_decoder_is_fed_as_vllms_backend_feeds_it():
    outcome = _outcome("llama")
    assert outcome.status == "compiled", outcome
    assert "position_ids" in outcome.extras["inputs"] and outcome.extras["sizes"] == [7, 13, 29]
    assert outcome.extras["max_abs_diff"] <= outcome.extras["tolerance"]


def _context(model_type: str) -> CaseContext:
    return CaseContext(ModelCase(model_type), Options(policies=("fixed",), checks=("compile",)))


def test_a_model_vllm_stops_is_not_compiled_and_says_where():
    failure, extras = engine_stop(engines.get("vllm"), ModelCase("t5"), _context("t5"))
    assert failure.status == "skipped" and failure.message.startswith("not reached: vLLM stops at backend/")
    assert extras["stopped_at"].startswith("backend/")
    assert engine_stop(engines.get("vllm"), ModelCase("llama"), _context("llama")) is None


def test_dynamic_rope_that_can_still_rescale_turns_vllms_compile_off():
    context = _context("llama")
    context.model()  # the plain meta build, before its config takes dynamic rope
    config = context.config()
    # vLLM serves it at max_position_embeddings x factor, where dynamic rope still rescales.
    config.rope_parameters = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    failure, extras = engine_stop(engines.get("vllm"), ModelCase("llama"), context)
    assert failure.status == "skipped" and extras == {"stopped_at": "backend/enable-if"}
    assert failure.message == "vLLM turns compile off at backend/enable-if: compile disabled (dynamic rope)"


@pytest.mark.slow
def test_a_sweep_compiles_as_vllm_by_default_and_says_so(tmp_path):
    # The plugin type is not in transformers' namespace (vLLM's registry refuses it): no compile
    # runs, so this sweep is cheap (t5's stop is checked in process above).
    proc = run_auditor("sweep", "--plugin", tests.checks.compile.plugin_models.__file__, "--models",
                       "auditor_compile_ok", "--checks", "compile", "--jobs", "1", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    header, rows = read_rows(tmp_path)
    assert header["run"]["experiment"]["compile_semantics"] == "vllm"
    rows = {row["model_type"]: row for row in rows if row["check"] == "compile"}
    assert rows["auditor_compile_ok"]["status"] == "skipped"
    assert rows["auditor_compile_ok"]["extras"]["semantics"] == "vllm"
    assert rows["auditor_compile_ok"]["message"].startswith("not reached: vLLM stops at backend/registry")
    # The reports say which semantics the compile column used.
    assert "compiled as vllm" in (tmp_path / "summary.md").read_text()
    assert "<td>vllm</td>" in (tmp_path / "report.html").read_text()


def _breaking_sdpa(real):
    def attention(*args, **kwargs):
        torch._dynamo.graph_break()  # a break inside the attention implementation
        return real(*args, **kwargs)

    return attention


def test_a_break_inside_the_attention_the_engine_replaces_does_not_count(monkeypatch):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    # Mocked: transformers' own sdpa function made to break the graph (no real model breaks only
    # there today), the real one called after the break. llama dispatches to it.
    monkeypatch.setitem(ALL_ATTENTION_FUNCTIONS._global_mapping, "sdpa",
                        _breaking_sdpa(ALL_ATTENTION_FUNCTIONS["sdpa"]))
    plain = _outcome("llama", "plain")
    assert plain.status == "graph-break" and "graph_break" in plain.extras["break_reason"]
    engine = _outcome("llama")
    assert engine.status == "compiled" and engine.extras["engine_attention"] is True, engine


def test_a_break_outside_attention_still_counts_under_the_engines_attention(monkeypatch):
    from transformers.models.llama.modeling_llama import LlamaMLP

    # Mocked likewise: llama's MLP made to break the graph, outside any attention.
    real = LlamaMLP.forward

    def forward(self, x):
        torch._dynamo.graph_break()
        return real(self, x)

    monkeypatch.setattr(LlamaMLP, "forward", forward)
    outcome = _outcome("llama")
    assert outcome.status == "graph-break" and outcome.extras["engine_attention"] is True, outcome
    assert any(b["function"] == "forward" and b["owner"] == "model" for b in outcome.extras["breaks"])
