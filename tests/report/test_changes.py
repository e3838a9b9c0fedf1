"""One count of what changed (auditor.report.changes), printed the same by every output, and the
per-engine answers of `auditor diff` and `auditor gate` (--fail-on-engine).

One real sweep (the CLI, real workers, real transformers) of llama and gpt2 with the backend check
is the night before. The night after is that run with SGLang's tp-plan gate failing on llama and
its later gates "not reached", as the backend check writes them: a crafted change (this machine
has one transformers; the release that would cause it cannot be installed here), made of the real
rows, so that what is tested is how a stop and the cells it leaves unreached count once.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from auditor.cli import main
from auditor.core.results import Result, read_run
from auditor.core.status import Status
from auditor.core.writing import ResultsWriter
from tests.conftest import run_auditor

BEFORE, AFTER = "20261201T020000Z", "20261202T020000Z"
STOP = "AttributeError: 'NoneType' object has no attribute 'items'"


def _night_after(row: Result) -> Result:
    if row.model_type != "llama" or not row.component.startswith("sglang/"):
        return row
    gates = ("sglang/attention", "sglang/vocab-embed", "sglang/compile-compatible")
    if row.component == "sglang/tp-plan":
        return replace(row, status=Status.REFUSED, message=STOP, signature=STOP, fault="engine")
    if row.component in gates:
        return replace(row, status=Status.SKIPPED, message="not reached: SGLang stops at backend/sglang/tp-plan",
                       signature="", fault="")
    return row


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    reports = tmp_path_factory.mktemp("changes") / "reports"
    proc = run_auditor("sweep", "--models", "llama,gpt2", "--checks", "backend", "--reruns", "0", "--jobs", "2",
                       "--timeout", "120", "--reports", str(reports), "--run-id", BEFORE)
    assert proc.returncode == 0, proc.stderr
    before = read_run(reports / BEFORE)
    (reports / AFTER).mkdir()
    with ResultsWriter(reports / AFTER / "results.jsonl", replace(before.info, transformers="9.9.9")) as writer:
        writer.write_all([_night_after(r) for r in before.results])
    # The night before claims an older transformers: the run it stands for ran under it.
    path = reports / BEFORE / "results.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["run"]["transformers"] = "9.9.8"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return reports, read_run(reports / BEFORE), read_run(reports / AFTER)


def test_a_stop_and_the_gates_it_leaves_unreached_are_one_change_of_one_type(nights):
    from auditor.report.changes import changes

    _, before, after = nights
    found = changes(before, after)
    assert found.environment == ("transformers 9.9.8 -> 9.9.9",)
    sglang, vllm = found.engine("sglang"), found.engine("vllm")
    assert vllm.line == f"vLLM {vllm.version}: none of your 2 types changed"
    assert [c.model_type for c in sglang.lost] == ["llama"] and not sglang.gained and not sglang.new_types
    lost = sglang.lost[0]
    assert lost.why == f"now stops at backend/sglang/tp-plan: {STOP}" and lost.fault == "engine"
    assert lost.repro == "auditor sweep --models llama --checks backend --device meta --backend aot_eager --dtype float32"
    assert set(lost.folded) == {"backend/sglang/tp-plan", "backend/sglang/attention", "backend/sglang/vocab-embed",
                                "backend/sglang/compile-compatible"}
    assert found.new_findings == () and found.folded == 4  # the stop is the type's change, not cells of its own
    assert found.headline() == f"Since {BEFORE}: transformers 9.9.8 -> 9.9.9; 0 new findings, 0 fixed, 0 flaky " \
                               "(4 more cells part of a type's change)"


def test_every_output_prints_the_same_count(nights, tmp_path, capsys):
    reports, before, after = nights
    assert main(["report", str(reports / AFTER)]) == 0
    capsys.readouterr()
    summary = (reports / AFTER / "summary.md").read_text()
    page = (reports / AFTER / "report.html").read_text()
    assert "SGLang 0.5.23: 1 lost of 2" in summary and "SGLang 0.5.23: 1 lost of 2" in page
    assert "none of your 2 types changed" in summary and "none of your 2 types changed" in page
    assert main(["diff", str(reports / BEFORE), str(reports / AFTER), "-o", str(tmp_path)]) == 1  # a type lost
    out = capsys.readouterr().out
    assert "  SGLang 0.5.23: 1 lost of 2" in out and "none of your 2 types changed" in out
    assert f"    llama now stops at backend/sglang/tp-plan: {STOP} (fault: engine)" in out
    assert "4 part of a type's verdict change" in out  # the diff's cell regressions, folded: none blocks
    assert main(["gate", str(reports / AFTER), "--against", str(reports / BEFORE)]) == 1
    assert "  SGLang 0.5.23: 1 lost of 2" in capsys.readouterr().err
    junit = tmp_path / "diff.xml"
    assert main(["diff", str(reports / BEFORE), str(reports / AFTER), "-o", str(tmp_path / "j"),
                 "--junit", str(junit)]) == 1
    suite = next(s for s in ET.parse(junit).getroot() if s.get("name").startswith("engine verdicts"))
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    sglang = cases[("SGLang 0.5.23", "llama")].find("failure")
    assert sglang.get("message") == f"lost: now stops at backend/sglang/tp-plan: {STOP}" and "fault: engine" in sglang.text
    vllm = [c for (engine, _), c in cases.items() if engine.startswith("vLLM")]
    assert len(vllm) == 1 and vllm[0].get("name") == "unchanged" and vllm[0].find("failure") is None
    assert "none of your 2 types changed" in vllm[0].find("system-out").text
    assert suite.get("failures") == "1"


def test_fail_on_engine_answers_for_the_engines_a_user_serves_with(nights, tmp_path, capsys):
    reports, _, _ = nights
    base, new = str(reports / BEFORE), str(reports / AFTER)
    assert main(["diff", base, new, "-o", str(tmp_path), "--fail-on-engine", "vllm"]) == 0
    assert main(["diff", base, new, "-o", str(tmp_path), "--fail-on-engine", "sglang"]) == 1
    assert main(["gate", new, "--against", base, "--fail-on-engine", "vllm"]) == 0
    assert main(["gate", new, "--against", base, "--fail-on-engine", "vllm", "--fail-on-engine", "sglang"]) == 1
    capsys.readouterr()
    with pytest.raises(SystemExit):  # names come from the engine registry
        main(["diff", base, new, "--fail-on-engine", "tgi"])
    assert "invalid choice: 'tgi'" in capsys.readouterr().err
