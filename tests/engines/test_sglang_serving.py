"""SGLang's own verdict (auditor.engines.sglang.serving): its real model loader builds each type,
in a real sweep, and where it stops is SGLang's own step and file:line. Needs SGLang (its venv:
scripts/install_sglang.sh; the nox session `sglang` and .ci/run run these tests there, listed in
tests/engines/SGLANG_TESTS). On a machine without a GPU the CUDA-only sglang-kernel is stood in for
(shim `sgl-kernel`): the one stand-in, named on every row.

One sweep for the module: `auditor sweep --engine sglang==0.5.23 --checks build,backend,serves
--policies fixed,sglang`, the user's command (the installed release: no venv of its own), over types
that pass and stop; then `auditor agree` on it.
"""

from __future__ import annotations

import csv
import importlib.util

import pytest

from tests.conftest import read_rows, run_auditor

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sglang") is None,
                                reason="SGLang is not installed: its own loader needs it (scripts/install_sglang.sh "
                                       "makes its venv; the nox session `sglang` runs these tests)")

# gemma3n_text last: SGLang registers a class of its own for it with transformers' AutoModel when
# its model registry is imported (at the first type's construction), which must not reach the
# worker's later plain builds. One worker, in this order.
TYPES = ("llama", "mixtral", "bloom", "olmoe", "qwen2_vl", "gemma3n_text")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from importlib.metadata import version

    out = tmp_path_factory.mktemp("sglang") / "run"
    done = run_auditor("sweep", "--engine", f"sglang=={version('sglang')}", "--models", ",".join(TYPES),
                       "--checks", "build,backend,serves", "--policies", "fixed,sglang", "-o", str(out),
                       "--jobs", "1")
    assert done.returncode in (0, 1), done.stderr[-3000:]
    header, rows = read_rows(out)
    serves = {row["model_type"]: row for row in rows if row["check"] == "serves" and row["component"] == "sglang"}
    verdicts = {row["model_type"]: row for row in csv.DictReader((out / "serve.csv").open())}
    return header, serves, verdicts, out


def test_every_type_is_decided_by_sglangs_own_loader(swept):
    _, serves, verdicts, _ = swept
    assert set(serves) == set(TYPES)
    assert {t: verdicts[t]["serve/sglang/verdict"] for t in TYPES} == {
        "llama": "servable", "mixtral": "servable", "qwen2_vl": "servable", "bloom": "stops", "olmoe": "stops",
        "gemma3n_text": "stops"}
    assert serves["llama"]["message"] == "servable: Transformers backend (TransformersForCausalLM)"
    assert serves["mixtral"]["message"] == "servable: Transformers backend (TransformersMoEForCausalLM)"
    assert serves["qwen2_vl"]["message"] == "servable: Transformers backend (TransformersMultiModalForCausalLM)"


def test_a_stop_names_sglangs_step_and_its_file_and_line(swept):
    _, serves, _, _ = swept
    bloom, olmoe = serves["bloom"], serves["olmoe"]
    assert bloom["status"] == "unsupported" and bloom["fault"] == "engine"
    assert bloom["extras"]["step"] == "constructor"
    assert "_supports_attention_backend=False" in bloom["message"]
    assert "[raised in the engine's code at sglang/srt/models/transformers.py:" in bloom["message"]
    assert "Unsupported TP style 'colwise_gather_output'" in olmoe["message"]
    assert "sglang/srt/models/transformers.py:" in olmoe["message"]


def test_sglangs_own_classes_stay_in_its_builds(swept):
    """gemma3n_text: SGLang's loader builds SGLang's own Gemma3nForCausalLM inside the Transformers
    backend (its registration, in force while SGLang builds) and stops there; the worker's plain
    build of the same type, after that, is transformers' class."""
    _, serves, _, out = swept
    assert "sglang/srt/models/transformers.py:" in serves["gemma3n_text"]["message"]
    _, rows = read_rows(out)
    [build] = [r for r in rows if r["model_type"] == "gemma3n_text" and r["check"] == "build" and not r["component"]]
    assert build["status"] == "build" and build["extras"]["model_class"] == "Gemma3nTextModel"


def test_built_on_meta_under_named_shims(swept):
    header, serves, _, _ = swept
    [engine] = [e for e in header["run"]["engines"] if e["name"] == "sglang"]
    named = {shim.split(":")[0] for shim in engine["shims"]}
    assert {"meta-device", "dummy-weights"} <= named
    for row in serves.values():
        assert {"meta-device", "dummy-weights"} <= set(row["extras"]["shims"])
        assert not row["extras"].get("built_on")  # none of these needed the CPU fallback


def test_sglangs_own_verdict_agrees_with_the_emulated_gates_or_the_record_says_why(swept):
    """The emulation's backend rows stop bloom and olmoe where SGLang's constructor stops them;
    gemma3n_text, which the emulation passes, is in the release record's `differs`, with why."""
    from auditor.engines.sglang.releases import RELEASE

    _, _, _, out = swept
    _, rows = read_rows(out)
    stopped = {row["model_type"]: row["component"] for row in rows if row["check"] == "backend"
               and not row["policy"] and row["status"] == "unsupported" and row["component"] != "sglang/pp-plan"
               and row["component"].startswith("sglang/")}
    assert stopped == {"bloom": "sglang/attention-backend", "olmoe": "sglang/tp-plan"}
    assert "gemma3n_text" in dict(RELEASE.differs)


def test_the_summary_reads_sglangs_own_answer(swept):
    summary = (swept[3] / "summary.md").read_text()
    assert "SGLang 0.5.23 (own code) 3 (0 native, 3 by the Transformers backend)" in summary


def test_agree_holds_the_emulated_gates_to_sglangs_own_construction(swept):
    """`auditor agree RUN --policies fixed,sglang`: beside the gate cells, SGLang's own verdict
    against the emulated gates' per type; gemma3n_text differs, and the release record says why."""
    from auditor.core.results import read_run
    from auditor.engines.sglang.releases import RELEASE
    from auditor.report.agreement import compare_verdicts

    out = swept[3]
    done = run_auditor("agree", str(out), "--policies", "fixed,sglang")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SGLang's own construction against its emulated gates" in done.stdout
    found = compare_verdicts(read_run(out), "sglang", dict(RELEASE.differs))
    assert found.compared == len(TYPES) and [d.model_type for d in found.differences] == ["gemma3n_text"]
    assert not found.unexplained and found.differences[0].why in done.stdout.replace("\\|", "|")
    # Without the record's reason the same difference is unexplained: agree's exit 1.
    assert [d.model_type for d in compare_verdicts(read_run(out), "sglang", {}).unexplained] == ["gemma3n_text"]
