"""The HTML report in a real headless Chromium, opened from file:// with no network."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from auditor.cli import main
from tests.report.helpers import FIXTURES

TWO = [FIXTURES / "py311.jsonl", FIXTURES / "py312.jsonl"]


def make_report(tmp_path: Path, inputs: list[Path]) -> Path:
    out = tmp_path / "report"
    assert main(["report", *map(str, inputs), "-o", str(out)]) == 0
    return out


def visible_models(page) -> list[str]:
    return page.eval_on_selector_all("#matrix tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.model)")


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("inputs", [[FIXTURES / "small.jsonl"], TWO], ids=["one-environment", "two-environments"])
def test_every_model_type_has_a_row_and_summary_matches_csv(page, tmp_path, inputs):
    out = make_report(tmp_path, inputs)
    page.goto((out / "report.html").as_uri())
    long = read_csv(out / "results.csv")
    assert visible_models(page) == sorted({row["model_type"] for row in long})
    assert page.inner_text("#shown") == f"showing {len(visible_models(page))} of {len(visible_models(page))} model types"

    expected = Counter((r["environment"], r["column"], r["status"]) for r in long)
    shown = page.eval_on_selector_all(
        "#summary tbody tr",
        # Merged runs compare the environments side by side: a row per column, a cell per
        # environment; one run has a row per column. Either way each chip says where it is.
        """rows => rows.flatMap(r => Array.from(r.querySelectorAll('.chip[data-status]')).map(
               c => [c.closest('[data-env]').dataset.env, r.dataset.column, c.dataset.status,
                     Number(c.dataset.count)]))""")
    assert {(e, c, s): n for e, c, s, n in shown} == dict(expected)
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_text_filter_hides_rows(page, tmp_path):
    page.goto((make_report(tmp_path, TWO) / "report.html").as_uri())
    page.fill("#filter", "LL")
    assert visible_models(page) == ["llama", "llava"]
    assert page.inner_text("#shown") == "showing 2 of 9 model types"
    page.fill("#filter", "")
    assert len(visible_models(page)) == 9


def test_disagree_toggle_shows_only_rows_where_environments_differ(page, tmp_path):
    out = make_report(tmp_path, TWO)
    page.goto((out / "report.html").as_uri())
    # Worked out from matrix.csv: a column whose non-empty statuses differ between the environments.
    disagreeing = set()
    for row in read_csv(out / "matrix.csv"):
        by_column: dict[str, set[str]] = {}
        for key, status in row.items():
            if key != "model_type" and status:
                by_column.setdefault(key.split(" | ", 1)[1], set()).add(status)
        if any(len(s) > 1 for s in by_column.values()):
            disagreeing.add(row["model_type"])
    assert disagreeing == {"detr", "llama", "llava", "whisper"}
    page.check("#disagree")
    assert set(visible_models(page)) == disagreeing
    assert page.locator("#matrix tbody tr:not([hidden]) td.dis").count() > 0
    page.uncheck("#disagree")
    assert len(visible_models(page)) == 9
    page.screenshot(path=str(tmp_path / "two-environments.png"), full_page=True)


def test_disagree_toggle_is_disabled_for_one_environment(page, tmp_path):
    page.goto((make_report(tmp_path, [FIXTURES / "small.jsonl"]) / "report.html").as_uri())
    assert page.is_disabled("#disagree")


def test_status_and_column_filters(page, tmp_path):
    page.goto((make_report(tmp_path, TWO) / "report.html").as_uri())
    page.click("#only-failing")
    assert "bert" not in visible_models(page) and "zamba" not in visible_models(page)
    assert "t5" in visible_models(page)
    page.click("#all-statuses")
    page.uncheck(".status-filter[value='build']")
    page.uncheck(".status-filter[value='decorate-error']")
    assert "t5" not in visible_models(page)  # its only failures are decorate-errors
    page.click("#all-statuses")

    page.click(".columns-filter summary")
    page.uncheck(".column-filter[value='0']")
    assert page.locator("#matrix tbody td.c0:visible").count() == 0
    assert page.locator("#matrix tbody td.c1:visible").count() > 0


def test_sorting_by_a_column_puts_its_statuses_in_legend_order(page, tmp_path):
    page.goto((make_report(tmp_path, TWO) / "report.html").as_uri())
    page.click("#matrix tr.cols th[data-col='0']")
    statuses = page.eval_on_selector_all("#matrix tbody tr", "rows => rows.map(r => r.cells[1].dataset.s || '')")
    assert statuses[0] == "build" and statuses[-1] == ""  # zamba has no cell in the first environment
    page.click("#matrix tr.cols th[data-col='0']")
    assert page.get_attribute("#matrix tr.cols th[data-col='0']", "aria-sort") == "descending"
    page.click("#matrix thead th.mt")
    assert visible_models(page) == sorted(visible_models(page))


def test_clicking_a_cell_shows_the_full_message(page, tmp_path):
    page.goto((make_report(tmp_path, TWO) / "report.html").as_uri())
    cell = page.locator("#matrix tr[data-model='autoformer'] td").first
    # The cell's title: its signature and whose fault it is (the one fault rule's, via the row).
    assert cell.get_attribute("title") == ("ValueError: The `prediction_length` config needs to be specified."
                                           " · fault: model")
    cell.click()
    assert page.is_visible("#details")
    assert page.inner_text("#d-title") == "autoformer"
    assert page.inner_text("#d-col") == "build"
    assert "prediction_length" in page.inner_text("#d-message")
    page.keyboard.press("Escape")
    assert not page.is_visible("#details")


def test_script_in_an_error_message_renders_as_text(page, tmp_path):
    page.goto((make_report(tmp_path, [FIXTURES / "xss.jsonl"]) / "report.html").as_uri())
    assert page.evaluate("document.scripts.length") == 2
    assert page.locator("img").count() == 0
    assert "<script>alert(N)</script>" in page.inner_text("#failures")  # grouped by cause: numbers masked
    assert "</script><script>alert(3)</script>" in page.inner_text("#failures")
    assert "label <i>x</i> & co" in page.inner_text("#environments")
    page.locator("#matrix tr[data-model='evil'] td").first.click()
    message = page.inner_text("#d-message")
    assert "<script>alert(1)</script> and <img src=x onerror=alert(2)>" in message and "second line" in message
    page.locator("#matrix tr[data-model='evil'] td").nth(1).click()
    assert page.inner_text("#d-message") == "</script><script>alert(3)</script>"
    # the page fixture fails the test had any alert() opened a dialog


def test_history_and_diff_pages_render(page, tmp_path):
    reports = tmp_path / "reports"
    for name, source in (("2026-11-28", "py311.jsonl"), ("2026-11-29", "py312.jsonl")):
        (reports / name).mkdir(parents=True)
        (reports / name / "results.jsonl").write_bytes((FIXTURES / source).read_bytes())
    assert main(["report", "--history", str(reports)]) == 0
    page.goto((reports / "index.html").as_uri())
    assert page.eval_on_selector_all("tr[data-run]", "rows => rows.map(r => r.dataset.run)") == [
        "2026-11-29", "2026-11-28"]
    assert page.locator("svg.chart rect").count() > 0
    page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
    page.click("a.diff-link")
    assert page.url.endswith("2026-11-29/diff.html")
    assert "Regressions (" in page.inner_text("body")
    page.screenshot(path=str(tmp_path / "diff.png"), full_page=True)
    page.go_back()
    page.click("a.report-link >> nth=0")
    assert page.locator("#matrix tbody tr").count() == 9


def test_failures_only_shows_the_rows_with_a_finding(page, tmp_path):
    """Not the rows whose only failures are skipped cells or failures expected by design."""
    from dataclasses import replace

    from tests.report.helpers import result, write_run

    rows = [result("llama", "build"), result("llama", "skipped", check="compile"),
            result("gpt2", "build"), replace(result("gpt2", "refused", check="pickle", component="by-ref-remote"),
                                              extras={"expected": True}),
            result("t5", "build"), result("t5", "refused", check="decorate", component="decoder", policy="legacy")]
    run = write_run(tmp_path / "run", rows)
    page.goto((make_report(tmp_path, [run / "results.jsonl"]) / "report.html").as_uri())
    assert visible_models(page) == ["gpt2", "llama", "t5"]
    assert page.locator("#matrix td.exp").count() == 1  # the expected failure is marked, not plain red
    page.click("#only-failing")
    assert visible_models(page) == ["t5"]
    assert not page.is_checked(".status-filter[value='skipped']")
    page.click("#all-statuses")
    assert visible_models(page) == ["gpt2", "llama", "t5"]


def test_backend_columns_follow_each_engines_gate_order_and_each_engine_has_a_verdict_column(page, tmp_path):
    from auditor import engines
    from tests.report.helpers import result, write_run

    vllm, sglang = engines.get("vllm").record(), engines.get("sglang").record()
    gates = [*vllm.gates, *sglang.gates]
    rows = [result("llama", "build")]
    rows += [result("llama", "build", check="backend", component=gate) for gate in sorted(gates)]  # by name
    rows += [result("bloom", "build", check="backend", component=gate) for gate in sorted(gates) if gate != "registry"]
    rows.append(result("bloom", "unsupported", check="backend", component="registry", message="no backend class"))
    run = write_run(tmp_path / "run", rows, engines=(vllm, sglang))
    page.goto((make_report(tmp_path, [run / "results.jsonl"]) / "report.html").as_uri())
    heads = page.eval_on_selector_all("#matrix tr.cols th", "ths => ths.map(t => t.textContent)")
    assert heads == ["build", *(f"backend/{gate}" for gate in gates)]
    assert heads[1:8] == ["backend/registry", "backend/build", "backend/decorate", "backend/enable-if",
                          "backend/pp-plan", "backend/tp-plan", "backend/attention"]
    verdicts = page.eval_on_selector_all("#matrix tbody tr", "rows => rows.map(r => [r.dataset.model, "
                                         "Array.from(r.querySelectorAll('td.vd')).map(td => td.textContent)])")
    assert verdicts == [["bloom", ["registry", "serves"]], ["llama", ["serves", "serves"]]]
    page.locator("#matrix tr[data-model='bloom'] td[data-s='unsupported']").click()
    assert page.inner_text("#d-col") == "backend/registry" and page.inner_text("#d-message") == "no backend class"
    assert page.locator("#glossary dt", has_text="fixed-no-config-skip").count() == 1


@pytest.fixture(scope="module")
def stops_report(tmp_path_factory):
    """A run whose two engines stop types at several gates with several causes, one undecided,
    and findings of three faults: its report.html and its run as read back."""
    from dataclasses import replace

    from auditor import engines
    from auditor.core.results import read_run
    from tests.report.helpers import result, write_run

    vllm, sglang = engines.get("vllm").record(), engines.get("sglang").record()
    stops = {  # model type -> {gate: (status, message)}; every other gate of both engines passes
        "bloom": {"registry": ("unsupported", "ValueError: no backend class for BloomForCausalLM")},
        "t5": {"registry": ("unsupported", "ValueError: no backend class for T5Model"),
               "sglang/registry": ("unsupported", "KeyError: T5Model is not in the registry")},
        "gpt2": {"tp-plan": ("unsupported", "ValueError: Unsupported TP style 'colwise_rep'")},
        "opt": {"tp-plan": ("timeout", "timeout after 300 s"), "sglang/attention": ("refused", "TypeError: no mask")},
        "mamba": {"attention": ("unsupported", "ValueError: no attention layers")},
    }
    rows = []
    for model_type in ("bert", "bloom", "gpt2", "llama", "mamba", "opt", "t5"):
        rows.append(result(model_type, "error" if model_type == "mamba" else "build", message="ValueError: bad config"))
        for gate in (*vllm.gates, *sglang.gates):
            status, message = stops.get(model_type, {}).get(gate, ("build", ""))
            rows.append(result(model_type, status, check="backend", component=gate, message=message))
    rows.append(replace(result("llama", "refused", check="decorate", component="decoder", policy="legacy"),
                        fault="engine/model"))
    run = write_run(tmp_path_factory.mktemp("stops") / "run", rows, engines=(vllm, sglang))
    out = make_report(tmp_path_factory.mktemp("stops-report"), [run / "results.jsonl"])
    return out / "report.html", read_run(run)


def test_choosing_an_engines_verdict_shows_the_types_it_gives_that_verdict(page, stops_report):
    from auditor.report.serve import verdicts

    html, run = stops_report
    found = verdicts([run])
    page.goto(html.as_uri())
    engine_names = list(dict.fromkeys(v.engine.name for v in found))
    assert page.locator(".verdict-filter").count() == len(engine_names) == 2
    seen = set()
    for index, name in enumerate(engine_names):
        select = f".verdict-filter[data-engine='{index}']"
        for value in page.eval_on_selector_all(f"{select} option", "os => os.map(o => o.value)")[1:]:
            page.select_option(select, value)
            wanted = sorted(v.model_type for v in found if v.engine.name == name and v.serves.value == value)
            assert visible_models(page) == wanted, (name, value)
            assert page.inner_text("#shown") == f"showing {len(wanted)} of 7 model types"
            seen.add(value)
        page.select_option(select, "")
    assert seen == {"servable", "stops", "undecided"}
    assert len(visible_models(page)) == 7
    # Two engines' filters together: the types both stop.
    page.select_option(".verdict-filter[data-engine='0']", "stops")
    page.select_option(".verdict-filter[data-engine='1']", "stops")
    assert visible_models(page) == ["t5"]
    page.click("#clear-filters")
    assert len(visible_models(page)) == 7


def test_clicking_a_cause_of_where_types_stop_shows_its_types(page, stops_report):
    from auditor.report.serve import headlines, verdicts, where_stopped

    html, run = stops_report
    expected = [(t.engine.name, g.gate, cause, sorted(types)) for h in headlines(verdicts([run])) for t in h.tallies
                for g in where_stopped(t) for cause, types in g.causes[:3]]
    page.goto(html.as_uri())
    causes = page.locator("table.where-stop a.cause")
    assert causes.count() == len(expected) >= 5
    page.fill("#filter", "zzz")  # a filter left over: the click shows the cause's types all the same
    for i, (engine, gate, cause, types) in enumerate(expected):
        link = causes.nth(i)
        assert link.inner_text() == cause
        assert link.evaluate("a => [a.closest('table').dataset.engine, a.closest('tr').dataset.gate]") == [engine, gate]
        link.click()
        assert visible_models(page) == types, cause
        assert page.input_value("#cause-filter") == link.get_attribute("data-cause")
        assert page.input_value("#filter") == ""
    # The undecided type: its timeout is a cause of its own, under `undecided`.
    assert ("vllm", "undecided", "timeout after 300 s", ["opt"]) in expected
    # A slice of the bar picks the same types as its cause in the table.
    page.locator(".stopbar[data-engine='sglang'] i[data-cause]").first.click()
    assert visible_models(page) == next(types for engine, _, _, types in expected if engine == "sglang")
    page.select_option("#cause-filter", "")
    assert len(visible_models(page)) == 7


def test_the_fault_filter_shows_the_rows_with_a_finding_of_that_fault(page, stops_report):
    from auditor.core.outcome import Outcome
    from auditor.report.matrix import build_matrix

    html, run = stops_report
    by_fault: dict[str, set[str]] = {}
    for model_type, _, cell in build_matrix([run]).cells():
        if cell.outcome is Outcome.FINDING:
            by_fault.setdefault(cell.result.fault, set()).add(model_type)
    assert set(by_fault) == {"model", "engine", "engine/model", "environment"}
    page.goto(html.as_uri())
    options = page.eval_on_selector_all("#fault-filter option", "os => os.map(o => [o.value, o.textContent])")
    assert options[1:] == [[f, f"{f} ({len(by_fault[f])})"] for f in ("model", "engine", "engine/model", "environment")]
    for fault, types in by_fault.items():
        page.select_option("#fault-filter", fault)
        assert visible_models(page) == sorted(types), fault
    # Only the columns shown count: without the build column, mamba's model finding is gone.
    page.select_option("#fault-filter", "model")
    page.click(".columns-filter summary")
    page.uncheck(".column-filter[value='0']")
    assert visible_models(page) == []
    page.check(".column-filter[value='0']")
    # With a verdict: the types vLLM stops that have an engine finding (their stop's own cell).
    page.select_option("#fault-filter", "engine")
    page.select_option(".verdict-filter[data-engine='0']", "stops")
    assert visible_models(page) == ["bloom", "gpt2", "mamba", "t5"]


def test_a_cause_filters_a_merged_report_too(page, stops_report, tmp_path):
    """Several environments: no verdict columns (nor their filters), and each environment's
    causes pick its own types."""
    from auditor.core.results import read_run
    from auditor.report.serve import headlines, verdicts, where_stopped
    from tests.report.helpers import write_run

    _, run = stops_report
    fixed = [r for r in run.results if not (r.model_type == "bloom" and r.column == "backend/registry")]
    other = read_run(write_run(tmp_path / "py312", fixed, python="3.12.4", engines=run.info.engines))
    out = make_report(tmp_path, [run.path, other.path])
    page.goto((out / "report.html").as_uri())
    assert page.locator(".verdict-filter").count() == 0 and page.locator("#matrix td.vd").count() == 0
    expected = {(h.environment, t.engine.name, cause): sorted(types) for h in headlines(verdicts([run, other]))
                for t in h.tallies for g in where_stopped(t) for cause, types in g.causes[:3]}
    registry = "ValueError: no backend class for <Name>"
    assert expected[(run.info.environment, "vllm", registry)] == ["bloom", "t5"]
    assert expected[(other.info.environment, "vllm", registry)] == ["t5"]
    for env in (run.info.environment, other.info.environment):
        page.locator(f"p.verdict[data-env='{env}'] ~ table.where-stop[data-engine='vllm'] a.cause",
                     has_text=registry).first.click()
        assert visible_models(page) == expected[(env, "vllm", registry)], env


def test_every_cause_of_a_gate_is_one_click_away_with_the_gates_line_and_the_matrix_from_the_first_screen(
        page, tmp_path):
    """Five causes at SGLang's registry: the three commonest shown, the other two folded in the
    table (never dropped), each filtering the matrix; the gate with the followed release's line."""
    from auditor import engines
    from tests.report.helpers import result, write_run

    sglang = engines.get("sglang")
    rows = [result(t, "unsupported", check="backend", component="sglang/registry",
                   message=f"AmbiguousGlobalPerLayerAttributeError: cause {word}")
            for t, word in (("a1", "alpha"), ("a2", "beta"), ("a3", "gamma"), ("a4", "delta"), ("a5", "epsilon"))]
    rows.append(result("llama", "build", check="backend", component="sglang/registry"))
    run = write_run(tmp_path / "run", rows, engines=(sglang.record(),), checks=("backend",))
    page.goto((make_report(tmp_path, [run / "results.jsonl"]) / "report.html").as_uri())
    gate = page.locator("table.where-stop tr[data-gate='backend/sglang/registry']")
    assert gate.locator("small.src").inner_text() == sglang.record().source("backend/sglang/registry") \
        == "sglang/srt/model_loader/utils.py:111-195"
    folded = gate.locator("details.more-causes")
    assert folded.locator("summary").inner_text() == "and 2 other causes"
    folded.locator("summary").click()
    link = folded.locator("a.cause").last
    assert link.inner_text() == "AmbiguousGlobalPerLayerAttributeError: cause gamma"  # the class name searchable
    assert gate.locator("a.cause").count() == 5
    link.click()
    assert visible_models(page) == ["a3"]
    page.evaluate("window.scrollTo(0, 0)")
    to_matrix = page.locator("header.top a.to-matrix")
    assert to_matrix.bounding_box()["y"] < page.viewport_size["height"]
    to_matrix.click()
    top = page.evaluate("document.getElementById('matrix-section').getBoundingClientRect().top")
    assert page.url.endswith("#matrix-section") and 0 <= top < page.viewport_size["height"]  # on screen now


def test_a_message_written_against_another_shows_whole(page, tmp_path):
    """Messages of one cause are in the page as the first one's head and tail around what differs
    (auditor.report.page.compact_messages); a click shows the message as the row has it."""
    import json

    from tests.report.helpers import page_cells, result, write_run

    sig = "ValueError: Layer N dispatches attention from more than one module (model.decoder.layers.N.self_attn)"
    messages = {t: f"ValueError: Layer {i} dispatches attention from more than one module "
                   f"(model.decoder.layers.{i}.self_attn) of {t}, which one vLLM attention layer cannot serve."
                for i, t in enumerate(["whisper", "bart", "t5"])}
    run = write_run(tmp_path / "run", [result(t, "unsupported", signature=sig, message=m) for t, m in messages.items()])
    out = make_report(tmp_path, [run])
    html = (out / "report.html").read_text(encoding="utf-8")
    start = html.index('<script type="application/json" id="report-data">')
    data = json.loads(html[html.index(">", start) + 1:html.index("</script>", start)])
    assert sum(isinstance(m, list) for m in data["messages"]) == 2  # two written against the first
    assert {t: c["message"] for (t, _), c in page_cells(html).items()} == messages
    page.goto((out / "report.html").as_uri())
    for model_type, message in messages.items():
        page.locator(f"#matrix tr[data-model='{model_type}'] td.c0").click()
        assert page.inner_text("#d-message") == message
