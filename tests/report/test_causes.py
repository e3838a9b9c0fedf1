"""Causes: what reports group failures by, on the messages of a real 622-type run."""

from __future__ import annotations

from auditor.core.results import read_run
from auditor.report.causes import cause_of
from auditor.report.matrix import build_matrix
from auditor.report.summary import failure_groups
from tests.report.helpers import result, write_run

POSITIONAL = ("TypeError: '{model}.__init__' received a positional argument of type '{config}', but no parameter "
              "of that type was found in the method signature. Please either annotate '{model}.__init__' or pass "
              "it as a keyword argument.")
# Spellings the signature's CamelCase mask misses: capitals in a row, digits and underscores.
NAMES = [("AfmoeModel", "AfmoeConfig"), ("GPT2Model", "GPT2Config"), ("Qwen2_5_VLTextModel", "Qwen2_5_VLTextConfig"),
         ("HYV4VLTextModel", "HYV4VLTextConfig"), ("PI0Model", "PI0Config"), ("FNetModel", "FNetConfig"),
         ("Nemotron3_5TranscribeAudioModel", "Nemotron3_5TranscribeAudioConfig"), ("DPRQuestionEncoder", "DPRConfig")]


def test_the_positional_argument_refusal_is_one_cause_whatever_the_class_names():
    causes = {cause_of(POSITIONAL.format(model=m, config=c)) for m, c in NAMES}
    (cause,) = causes  # cut at the signature's 200 characters, at the same place for each
    assert cause.startswith("TypeError: '<Name>.__init__' received a positional argument of type '<Name>', but no "
                            "parameter of that type was found in the method signature.")
    # a builtin type is another cause
    assert cause_of(POSITIONAL.format(model="IBertModel", config="int")) not in causes
    assert cause_of("AttributeError: 'NoneType' object has no attribute 'get'") == \
        "AttributeError: 'NoneType' object has no attribute 'get'"


def test_a_gate_an_engine_stops_at_keeps_its_name():
    for gate in ("backend/sglang/attention-backend", "backend/sglang/embeddings", "backend/decorate"):
        message = f"not reached: SGLang stops at {gate}"
        assert cause_of(message, "not reached: SGLang stops at backend<path>") == message


def test_the_common_failures_group_by_cause_and_keep_the_rows_signature(tmp_path):
    rows = [result(m.lower(), "refused", check="decorate", policy="vllm", component="decoder",
                   message=POSITIONAL.format(model=m, config=c), signature=f"TypeError: '{m}' sig")
            for m, c in NAMES]
    matrix = build_matrix([read_run(write_run(tmp_path / "run", rows))])
    (group,) = failure_groups(matrix)
    assert group.count == len(NAMES) and group.signature.startswith("TypeError: '<Name>.__init__'")
    assert {cell.signature for _, _, cell in matrix.cells()} == {f"TypeError: '{m}' sig" for m, _ in NAMES}


# The rows of transformers 5.25.0's sweep before SGLang's copied line was marked: ergo's SGLang
# compile row an auditor-error, beside two model errors of the same message.
NONE_GET = "AttributeError: 'NoneType' object has no attribute 'get'"


def _auditor_error_beside_model_errors(tmp_path):
    from auditor.report.markdown import render_summary
    from auditor.report.page import render_report

    rows = [result("ergo", "auditor-error", check="backend", component="sglang/compile-compatible",
                   message=f"{NONE_GET} [auditor bug at auditor/engines/sglang/gates.py:202]", signature=NONE_GET),
            *(result(m, "error", message=NONE_GET, signature=NONE_GET) for m in ("chameleon", "emu3")),
            result("llama", "build")]
    run = read_run(write_run(tmp_path / "run", rows))
    return build_matrix([run]), render_summary([run]), render_report([run])


def test_the_auditors_own_error_is_never_grouped_with_another_fault_and_heads_the_report(tmp_path):
    from auditor.report.summary import auditor_errors

    matrix, summary, page = _auditor_error_beside_model_errors(tmp_path)
    groups = {group.faults: group for group in failure_groups(matrix)}
    assert set(groups) == {("auditor",), ("model",)}
    assert groups[("auditor",)].model_types == ("ergo",) and groups[("model",)].model_types == ("chameleon", "emu3")
    assert [g.model_types for g in auditor_errors(matrix)] == [("ergo",)]
    assert summary.startswith("### ⚠ The auditor's own errors: 1 cells")
    assert "backend/sglang/compile-compatible (ergo)" in summary.splitlines()[2]
    assert page.index('id="auditor-errors"') < page.index('id="tally"') < page.index('id="summary"')


def test_an_exceptions_class_name_stays_in_its_cause_to_be_searched_for():
    # vLLM's per-layer stop of dots3_note as the one wording (auditor.core.fault.per_layer_message) says it
    message = ("vLLM reads per-layer attribute 'num_attention_heads' globally at vllm/transformers_utils/config.py:1309: "
               "AmbiguousGlobalPerLayerAttributeError: 'num_attention_heads' is per-layer in Dots3NoteTextConfig "
               "(raised KeyError)")
    cause = cause_of(message)
    assert "AmbiguousGlobalPerLayerAttributeError" in cause and "KeyError" in cause
    assert "vllm/transformers_utils/config.py:1309" in cause and "Dots3NoteTextConfig" not in cause
