"""A gate that raises in the engine's own code stops the engine, whatever the gate's answer would
have meant (auditor.core.engineinfo.stops, the one rule; Engine.stops_at and the verdicts read it).

ergo under transformers 5.25.0 (the locked release): SGLang 0.5.23's can_enable_torch_compile, a
gate that only turns compile off when it answers, raises AttributeError on ergo's config, and
TransformersBase.__init__ raises with it. One real sweep of ergo (build, backend) is read by every
view: serve.csv, summary.md, report.html, the since-section against the same rows under the rule
before it (a header without `raising`, as runs written before it are), and the atlas.
"""

from __future__ import annotations

import csv
import json

import pytest
import transformers

from auditor import engines
from auditor.core.engineinfo import RAISED
from auditor.core.status import Failure, Status
from auditor.engines.interface import Verdict, safely
from tests.conftest import read_rows, run_auditor

STOP = "stops at backend/sglang/compile-compatible: AttributeError: 'NoneType' object has no attribute 'get'"
CITED = "sglang/srt/models/transformers.py:71-91"

needs_5_25 = pytest.mark.skipif(transformers.__version__ != "5.25.0",
                                reason="ergo's config makes can_enable_torch_compile raise under transformers 5.25.0")


@pytest.fixture(scope="module")
def ergo(tmp_path_factory):
    """The sweep, its report against the same rows under the old rule, and an atlas of it."""
    base = tmp_path_factory.mktemp("raised")
    run = base / "run"
    swept = run_auditor("sweep", "--models", "ergo", "--checks", "build,backend", "-o", str(run), "--jobs", "1")
    assert swept.returncode in (0, 1), swept.stderr
    header, *rows = (run / "results.jsonl").read_text().splitlines()
    old = json.loads(header)
    for engine in old["run"]["engines"]:
        engine.pop("raising")
    (base / "old").mkdir()
    (base / "old" / "results.jsonl").write_text("\n".join([json.dumps(old), *rows]) + "\n")
    since = run_auditor("report", str(run), "--against", str(base / "old"), "-o", str(base / "since"))
    assert since.returncode in (0, 1), since.stderr
    atlas = run_auditor("atlas", str(base / "atlas"), "--add", str(run))
    assert atlas.returncode == 0, atlas.stderr
    return base, swept.stdout + swept.stderr


@needs_5_25
def test_the_row_says_the_gate_raised_in_the_engines_code(ergo):
    _, rows = read_rows(ergo[0] / "run")
    [row] = [r for r in rows if r["component"] == "sglang/compile-compatible"]
    assert row["status"] == "unsupported" and row["fault"] == "engine"
    assert row["extras"][RAISED] is True and CITED in row["message"]


@needs_5_25
def test_serve_csv_summary_and_terminal_say_sglang_stops_there(ergo):
    base, stdout = ergo
    [verdict] = list(csv.DictReader((base / "run" / "serve.csv").open()))
    assert verdict["serve/sglang/verdict"] == "stops"
    assert verdict["serve/sglang"].startswith(STOP) and CITED in verdict["serve/sglang"]
    assert verdict["serve/sglang/gate"] == "backend/sglang/compile-compatible"
    assert verdict["serve/vllm/verdict"] == "servable"  # vLLM's gates do not raise on ergo
    summary = (base / "run" / "summary.md").read_text()
    assert "SGLang 0.5.23 (emulated) 0;" in summary
    assert "| backend/sglang/compile-compatible | 1 |" in summary
    assert "SGLang 0.5.23 (emulated) 0" in stdout


@needs_5_25
def test_report_html_counts_the_stop(ergo):
    page = (ergo[0] / "run" / "report.html").read_text()
    assert "SGLang 0.5.23 (emulated) stops 1 model type" in page
    assert 'data-gate="backend/sglang/compile-compatible"' in page


@needs_5_25
def test_the_since_section_and_the_atlas_follow(ergo):
    base = ergo[0]
    summary = (base / "since" / "summary.md").read_text()
    assert "**SGLang 0.5.23: 1 lost of 1**" in summary
    assert "ergo now stops at backend/sglang/compile-compatible" in summary
    page = (base / "atlas" / "site" / "types" / "ergo.html").read_text()
    sglang = page[page.index("SGLang 0.5.23"):]
    assert "stops" in sglang and "backend/sglang/compile-compatible" in sglang


def _raises():
    raise AttributeError("'NoneType' object has no attribute 'get'")


@pytest.mark.parametrize(("engine", "gate", "stops"), [
    ("sglang", "compile-compatible", True),  # TransformersBase.__init__ runs it: its raise stops SGLang
    ("sglang", "pp-plan", False),  # asked with two stages: a one-stage engine never runs it
    ("vllm", "pp-plan", False),
    ("vllm", "tp-plan", True),
])
def test_a_raise_stops_where_the_engine_runs_the_step_and_an_answer_keeps_its_meaning(engine, gate, stops):
    found = engines.get(engine)
    raised = safely(_raises, package=found.package)
    assert isinstance(raised, Failure) and raised.extras[RAISED] is True
    assert found.stops_at(gate, raised) is stops
    refused = safely(lambda: Verdict(False, "ValueError: no pp plan"), package=found.package)
    assert isinstance(refused, Failure) and refused.status is Status.UNSUPPORTED and RAISED not in refused.extras
    assert found.stops_at(gate, refused) is (gate in found.stopping)
    assert found.record().stops_at(found.component(gate), True, raised.extras) is stops
