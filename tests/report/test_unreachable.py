"""The report marks the decorate cells of model types that a backend gate stops (kept, not hidden).

Which gates stop comes from the engine (Engine.stopping), as the run's header records it.
"""

from auditor import engines
from auditor.core.results import read_run
from auditor.report.page import render_report
from auditor.report.serve import unreachable
from tests.report.helpers import page_cells, result, write_run


def _run(tmp_path):
    rows = [
        result("llama", "build", check="decorate", component="decoder", policy="legacy"),
        result("llama", "build", check="backend", component="registry"),
        result("llama", "build", check="backend", component="attention"),
        result("bloom", "build", check="decorate", component="decoder", policy="legacy"),
        result("bloom", "unsupported", check="backend", component="registry"),
        result("bloom", "skipped", check="backend", component="attention"),
        result("jamba", "build", check="decorate", component="decoder", policy="legacy"),
        result("jamba", "build", check="backend", component="registry"),
        result("jamba", "unsupported", check="backend", component="attention"),
        # The pipeline-parallel plan only matters with several stages: it stops nothing.
        result("gpt2", "build", check="decorate", component="decoder", policy="legacy"),
        result("gpt2", "unsupported", check="backend", component="pp-plan"),
    ]
    return read_run(write_run(tmp_path / "run", rows, engines=(engines.get("vllm").record(),)))


def test_the_types_a_stopping_gate_fails_are_unreachable(tmp_path):
    found = unreachable([_run(tmp_path)])
    assert {model_type: why for (_, model_type), why in found.items()} == {
        "bloom": "vLLM stops at backend/registry (unsupported)", "jamba": "vLLM stops at backend/attention (unsupported)"}


def test_a_run_that_recorded_no_engine_marks_nothing(tmp_path):
    """A run written before the header recorded its engines has no rule to judge by: no marks,
    rather than a guess."""
    run = read_run(write_run(tmp_path / "old", [result("bloom", "unsupported", check="backend", component="registry")]))
    assert run.info.engines == ()
    assert unreachable([run]) == {}


def test_the_page_keeps_their_decorate_cells_and_marks_them(tmp_path):
    page = render_report([_run(tmp_path)])
    assert "2 model types fail a stopping gate of every serving engine the run checked" in page
    marked = [cell["title"] for cell in page_cells(page).values() if cell["gate"]]
    assert len(marked) == 2 and all(cell_title.count("unreachable: ") == 1 for cell_title in marked)
    assert any(t.endswith("unreachable: vLLM stops at backend/registry (unsupported)") for t in marked)
    assert any(t.endswith("unreachable: vLLM stops at backend/attention (unsupported)") for t in marked)
