"""Whose fault every cell is, on one default sweep (build, decorate, pickle, backend) through the
real CLI: real types where transformers has them (sam and git meet vLLM's attention setting,
dots3_note's per-layer config meets SGLang's text-config read, hunyuan_v1_dense fails on its own, detr
wants timm), a plugin type where it has none (tests/plugins/fault_models.py: a model that copies a
tensor at __init__, which the meta device cannot do)."""

from pathlib import Path

import pytest

from auditor import engines
from auditor.core.fault import Fault
from auditor.core.results import read_run
from auditor.core.status import Status
from auditor.engines.vllm.releases import followed
from tests.checks.test_decorate_check import known
from tests.conftest import run_auditor

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "fault_models.py")
SAMPLE = ["sam", "git", "dots3_note", "hunyuan_v1_dense", "detr", "llama", "funnel"]
PLUGIN_TYPES = ["auditor_fault_meta_copy"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fault")
    proc = run_auditor("sweep", "--plugin", PLUGIN, "--models", ",".join(known(SAMPLE) + PLUGIN_TYPES),
                       "--jobs", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return read_run(out)


@pytest.fixture(scope="module")
def rows(run):
    return run.results


def _row(rows, model_type, check, component=""):
    found = [r for r in rows if (r.model_type, r.check, r.component, r.policy) == (model_type, check, component, "")]
    assert found, (model_type, check, component)
    return found[0]


def test_every_row_has_a_fault_of_the_vocabulary_and_every_failure_one(rows):
    values = {fault.value for fault in Fault}
    for r in rows:
        assert r.fault in values, r
        assert (r.fault == "") == (r.status.ok or r.status is Status.SKIPPED), r


def test_no_error_or_unsupported_row_was_raised_in_the_auditors_own_frames(rows):
    """The emulation refuses with EngineRefusal; anything else our frames raise is auditor-error."""
    for r in rows:
        if r.status in (Status.ERROR, Status.UNSUPPORTED):
            assert r.extras.get("raised_by") != "auditor", r
            assert "[auditor bug at" not in r.message, r
        assert r.status is not Status.AUDITOR_ERROR, r  # nor any auditor bug on these types


def test_vllm_cannot_build_sam_and_git_its_setting_meets_their_own_attention_dict(rows):
    for model_type in ("sam", "git"):
        assert _row(rows, model_type, "build").status is Status.BUILD  # the model builds on its own
        row = _row(rows, model_type, "backend", "build")
        assert (row.status, row.fault) == (Status.UNSUPPORTED, Fault.PAIRING.value), row
        assert row.message.startswith("KeyError: 'vllm' [raised in the model's code at transformers/models/")
        assert "_ATTENTION_CLASSES[config._attn_implementation]" in row.message


def test_no_row_of_a_check_lacks_its_column_and_every_engine_meets_every_type(rows):
    types = known(SAMPLE) + PLUGIN_TYPES
    for r in rows:
        if r.check == "backend":
            assert r.component, r
    for engine in engines.all():
        for model_type in types:
            have = {r.component for r in rows if r.model_type == model_type and r.check == "backend" and not r.policy}
            assert {engine.component(g) for g in engine.gate_names} <= have, (engine.name, model_type)


def test_a_per_layer_config_gets_every_sglang_row_and_the_line_that_reads_it(rows):
    if "dots3_note" not in known(["dots3_note"]):
        pytest.skip("no dots3_note in this transformers")
    row = _row(rows, "dots3_note", "backend", "sglang/registry")
    assert (row.status, row.fault) == (Status.UNSUPPORTED, Fault.ENGINE.value)
    assert row.signature.startswith("SGLang reads per-layer attribute 'num_attention_heads' globally at "
                                    "sglang/srt/utils/hf_transformers/common.py:605: ")
    assert row.extras["per_layer"] == {"attribute": "num_attention_heads",
                                       "read_at": "sglang/srt/utils/hf_transformers/common.py:605"}
    # vLLM's registry reads the same attribute in its own get_hf_text_config: one line each to fix.
    vllm = _row(rows, "dots3_note", "backend", "registry")
    assert (vllm.status, vllm.fault) == (Status.UNSUPPORTED, Fault.ENGINE.value)
    # The line is the followed release's record (0.33.0: config.py:1264; 0.34.0: config.py:1309).
    read_at = f"vllm/{followed().citations['per-layer read']}"
    assert read_at.startswith("vllm/transformers_utils/config.py:")
    assert vllm.signature.startswith(f"vLLM reads per-layer attribute 'num_attention_heads' globally at {read_at}: ")


def test_the_models_own_failure_and_the_environments(rows):
    model = _row(rows, "hunyuan_v1_dense", "build")
    assert (model.status, model.fault) == (Status.ERROR, Fault.MODEL.value)
    # The engine's build of a model that fails on its own is the model's failure, not a verdict.
    engine_build = _row(rows, "hunyuan_v1_dense", "backend", "build")
    assert (engine_build.status, engine_build.fault) == (Status.ERROR, Fault.MODEL.value)
    missing = _row(rows, "detr", "build")
    assert (missing.status, missing.fault) == (Status.MISSING_DEPENDENCY, Fault.ENVIRONMENT.value)
    meta = _row(rows, "auditor_fault_meta_copy", "build")
    assert (meta.status, meta.fault) == (Status.UNDECIDED, Fault.ENVIRONMENT.value)


def test_remote_code_shipped_by_reference_is_the_engines_and_expected(rows):
    row = _row(rows, "llama", "pickle", "by-ref-remote")
    assert row.status is Status.ERROR and row.extras.get("expected") is True
    assert row.fault == Fault.ENGINE.value


def test_results_csv_carries_the_fault(run):
    import pandas as pd

    frame = pd.read_csv(run.path.parent / "results.csv", keep_default_na=False)
    assert set(frame["fault"]) <= {f.value for f in Fault}
    sam = frame[(frame.model_type == "sam") & (frame.column == "backend/build")]
    assert list(sam["fault"]) == ["engine/model"]


def test_serve_csv_says_whose_fault_each_stop_is(run):
    import pandas as pd

    frame = pd.read_csv(run.path.parent / "serve.csv", keep_default_na=False).set_index("model_type")
    assert (frame.loc["sam", "serve/vllm/gate"], frame.loc["sam", "serve/vllm/fault"]) == ("backend/build",
                                                                                           "engine/model")
    assert frame.loc["llama", "serve/vllm/fault"] == ""  # served: nobody's fault


def test_junit_reports_an_auditor_fault_as_an_error_of_the_tool(tmp_path):
    """A row of the auditor's own failure (as a death row of an executor is) is an <error>, the model's a <failure>."""
    from auditor.core.results import read_run
    from auditor.report.junit import render_junit
    from tests.report.helpers import result, write_run

    out = write_run(tmp_path / "run", [result("llama", "auditor-error", signature="ExecutorError: the Ray node died"),
                                       result("gpt2", "error", signature="ValueError: no")])
    xml = render_junit([read_run(out)])
    assert xml.count("<error ") == 1 and xml.count("<failure ") == 1
    assert 'errors="1"' in xml and 'failures="1"' in xml
