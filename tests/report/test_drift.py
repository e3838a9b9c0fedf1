"""Config drift on fingerprints: crafted ones for each kind of change and the grouping, and the
real ones recorded from sweeps of transformers 5.17.0 / 5.18.0 and 4.57.6 / 5.0.0
(tests/fixtures/drift/, written by scripts/record_drift_fixture.py)."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.core.results import Result, read_run
from auditor.core.status import Status
from auditor.models.fingerprint import canonical, config_fingerprint, digest
from auditor.report.diff import diff_runs
from auditor.report.diff_render import render_diff_html, render_diff_markdown, render_diff_text
from auditor.report.drift import config_drift
from tests.conftest import run_auditor
from tests.report.helpers import write_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "drift"


def _row(model_type: str, config: dict, *, model_class: str = "M", parameters: int = 10, **attrs) -> Result:
    fingerprint = {"config": canonical(config), "attribute_map": attrs.get("attribute_map", {}),
                   "base_model_tp_plan": attrs.get("tp", {}), "base_model_pp_plan": {}, "sub_configs": []}
    fingerprint["digest"] = digest(fingerprint)
    return Result(model_type, "build", Status.BUILD, extras={"fingerprint": fingerprint, "model_class": model_class,
                                                             "parameters": parameters})


def _runs(tmp_path, before, after):
    return read_run(write_run(tmp_path / "base", before)), read_run(write_run(tmp_path / "new", after))


def test_each_kind_of_change(tmp_path):
    old = {"rope_theta": 10000.0, "rope_scaling": None, "hidden_size": 64, "dropout": 0.1,
           "text_config": {"model_type": "t", "heads": 4}, "id2label": {"0": "A"}}
    new = {"rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "hidden_size": 64,
           "dropout": 0.0, "text_config": {"model_type": "t", "heads": 8}, "id2label": {"0": "B"}, "extra": True}
    base, new_run = _runs(tmp_path, [_row("m", old, attribute_map={"n": "hidden_size"})],
                          [_row("m", new, attribute_map={"n": "width"}, tp={"layers.*.q": "colwise"},
                                model_class="M2", parameters=20)])
    drift = config_drift(base, new_run)
    assert drift.compared == 1 and drift.drifted == ("m",)
    texts = [c.text() for c in drift.types[0].changes]
    assert texts == [
        "removed `rope_scaling` (was null)",
        "renamed `rope_theta` → `rope_parameters.rope_theta` (10000.0)",
        "added `extra` = true",
        "added `rope_parameters.rope_type` = \"default\"",
        "default of `dropout`: 0.1 → 0.0",
        "default of `id2label`: {\"0\": \"A\"} → {\"0\": \"B\"}",
        "default of `text_config.heads`: 4 → 8",
        "attribute-map `n`: \"hidden_size\" → \"width\"",
        "tp-plan `layers.*.q`: null → \"colwise\"",
        "model class: \"M\" → \"M2\"",
        "parameters on meta: 10 → 20",
    ]


def test_equal_configs_in_another_order_do_not_drift(tmp_path):
    a = {"b": 1, "a": {"model_type": "x", "z": [1, 2], "y": None}, "transformers_version": "5.17.0"}
    b = {"a": {"y": None, "z": [1, 2], "model_type": "x"}, "b": 1, "transformers_version": "5.18.0",
         "_name_or_path": "somewhere"}
    drift = config_drift(*_runs(tmp_path, [_row("m", a)], [_row("m", b)]))
    assert drift.compared == 1 and drift.types == ()


def test_changes_shared_by_many_types_are_one_group(tmp_path):
    generation = {"num_beams": 1, "temperature": 1.0, "top_k": 50}
    before = [_row(f"t{i}", {**generation, "size": i, **({"rope_theta": 1e4} if i < 3 else {})}) for i in range(12)]
    after = [_row(f"t{i}", {"size": i, **({"rope_parameters": {"rope_theta": 1e4}} if i < 3 else {})})
             for i in range(12)]
    drift = config_drift(*_runs(tmp_path, before, after))
    assert len(drift.types) == 12
    assert sorted(g.change.key for g in drift.shared) == ["num_beams", "temperature", "top_k"]
    assert all(len(g.model_types) == 12 for g in drift.shared)
    own = {t.model_type: [c.text() for c in t.changes] for t in drift.types if t.changes}
    assert own == {f"t{i}": ["renamed `rope_theta` → `rope_parameters.rope_theta` (10000.0)"] for i in range(3)}


def test_the_fingerprint_of_a_real_config():
    from transformers import LlamaConfig

    fingerprint = config_fingerprint(LlamaConfig())
    assert "transformers_version" not in fingerprint["config"]
    assert fingerprint["base_model_tp_plan"]["layers.*.self_attn.q_proj"] == "colwise"
    assert fingerprint["digest"] == config_fingerprint(LlamaConfig())["digest"]
    assert fingerprint["digest"] != config_fingerprint(LlamaConfig(hidden_size=128))["digest"]


def _recorded(name: str, tmp_path):
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    runs = []
    for side in ("base", "new"):
        rows = [_from_fixture(model_type, row) for model_type, row in data[side].items()]
        runs.append(read_run(write_run(tmp_path / side, rows, transformers=data["versions"][side])))
    return data, runs


def _from_fixture(model_type: str, row: dict) -> Result:
    return Result(model_type, "build", Status(row["status"]), extras=row["extras"])


def test_recorded_5_17_to_5_18_lists_every_changed_type_and_nothing_else(tmp_path):
    """The fixture holds the 20 types whose to_dict() differs, by scripts/config_dicts.py (plain
    transformers, no auditor code), and 10 that do not."""
    data, (base, new) = _recorded("5.17.0-5.18.0", tmp_path)
    drift = config_drift(base, new)
    independent = data["independent_changed"]["model_types"]
    assert len(independent) == 20 and set(independent) <= set(data["base"])
    assert sorted(drift.drifted) == sorted(independent)
    assert drift.compared == len(data["base"]) == 30
    videomae = next(t for t in drift.types if t.model_type == "videomae")
    assert [c.kind for c in videomae.changes] == ["renamed", "parameters"]


def test_recorded_4_57_to_5_0_groups_the_generation_fields(tmp_path):
    _, (base, new) = _recorded("4.57.6-5.0.0", tmp_path)
    drift = config_drift(base, new)
    shared = {g.change.key for g in drift.shared}
    assert {"num_beams", "temperature", "top_k"} <= shared
    llama = next(t for t in drift.types if t.model_type == "llama")
    texts = " ".join(c.text() for c in llama.changes)
    assert "rope_theta" in texts and "rope_parameters" in texts and "num_beams" not in texts


def test_diff_shows_and_gates_on_drift(tmp_path):
    base = write_run(tmp_path / "base", [_row("m", {"a": 1}), _row("n", {"b": 1})])
    new = write_run(tmp_path / "new", [_row("m", {"a": 2}), _row("n", {"b": 1})])
    diff = diff_runs(read_run(base), read_run(new))
    assert "default of `a`: 1 → 2" in render_diff_text(diff)
    assert "## Config drift (1)" in render_diff_markdown(diff)
    assert 'data-type="m"' in render_diff_html(diff) and 'data-type="n"' not in render_diff_html(diff)
    assert run_auditor("diff", str(base), str(new)).returncode == 0
    gated = run_auditor("diff", str(base), str(new), "--fail-on-drift")
    assert gated.returncode == 1 and "--fail-on-drift: 1 of 2 model types" in gated.stderr
