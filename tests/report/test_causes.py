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
