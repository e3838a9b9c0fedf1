"""--dtype: the compile check builds and runs the tiny model in the dtype the engine serves it in.

In process, the compile check itself (auditor.checks.compile.CompileCheck) on real tiny models, as
a sweep's worker runs it: `auto` resolved per type as vLLM resolves dtype="auto" (the rule named
on the row), a given dtype taken as it is, the media inputs of a multimodal type cast to it, the
tolerance following it. The CPU default (float32) is what every other compile test runs."""

import pytest
import torch

from auditor.checks import get
from auditor.checks.interface import CaseContext, Options
from auditor.models.cases import ModelCase


def _rows(model_type: str, dtype: str, encoders: bool = False):
    options = Options(policies=("fixed",), checks=("compile",), backend="eager", dtype=dtype,
                      compile_encoders=encoders, compile_ungated=True)
    case = ModelCase(model_type, "builtin")
    try:
        return list(get("compile").run(case, CaseContext(case, options)))
    finally:
        torch._dynamo.reset()


@pytest.fixture(scope="module")
def llama_auto():
    return _rows("llama", "auto")


def test_auto_builds_in_the_dtype_vllm_resolves_and_names_its_rule(llama_auto):
    (row,) = llama_auto
    assert row.status == "compiled", row
    # LlamaModel's default config: float32, a pooling architecture: vLLM downcasts it to float16.
    assert row.extras["dtype"] == "float16"
    assert row.extras["dtype_rule"].startswith("vLLM ") and "vllm/config/model.py:" in row.extras["dtype_rule"]
    assert row.extras["tolerance"] > 1e-2  # float16's, not float32's


def test_a_given_dtype_reaches_the_media_inputs_of_an_audio_type():
    (row,) = _rows("whisper", "bfloat16")
    assert row.extras["dtype"] == "bfloat16" and "dtype_rule" not in row.extras
    # Its input features in float32 would meet bfloat16 weights: "Input type (float) and bias type
    # (c10::BFloat16) should be the same", an eager-error of the auditor's making.
    assert row.status == "compiled", row
