"""The pure pieces of the HTML report: status styles, the merged matrix, counts and failures."""

from __future__ import annotations

import re

from auditor.core.results import read_run
from auditor.core.status import Status
from auditor.report.charts import horizontal_bars, vertical_bars
from auditor.report.matrix import build_matrix
from auditor.report.statuses import STYLES, is_ok, legend, rank, style
from auditor.report.summary import Counts, column_summaries, failure_groups
from tests.report.helpers import FIXTURES, counts_text, failure_count, result, write_run


def test_every_status_of_the_enum_has_a_style():
    assert {s.value for s in Status} <= set(STYLES)


def test_unknown_status_gets_a_stable_fallback_style():
    first, again = style("graph-break-2"), style("graph-break-2")
    assert first == again and not first.known and not first.ok
    assert re.fullmatch(r"#[0-9a-f]{6}", first.color)
    assert first.text_color in ("#000", "#fff")
    assert rank("zzz-new") > rank("skipped") > rank("build")


def test_only_build_compiled_and_the_weights_checks_same_and_loaded_are_ok():
    assert [s for s in [*STYLES, "whatever"] if is_ok(s)] == ["build", "compiled", "same", "loaded"]


def test_legend_orders_known_statuses_first_then_unknown_by_name():
    names = [s.name for s in legend(["zeta", "error", "build", "alpha", "error"])]
    assert names == ["build", "error", "alpha", "zeta"]


def two_environments():
    return build_matrix([read_run(FIXTURES / "py311.jsonl"), read_run(FIXTURES / "py312.jsonl")])


def test_matrix_groups_columns_by_environment_build_first():
    matrix = two_environments()
    assert matrix.environments == ("py3.11 tf5.24.0 torch2.13.0+cpu", "py3.12 tf5.25.0 torch2.13.0+cpu")
    assert [c.column for c in matrix.groups[0].columns] == ["build", "decorate/fixed", "decorate/legacy"]
    assert [c.column for c in matrix.groups[1].columns][-2:] == ["pickle/text_config", "pickle/vision_config"]
    assert [r.model_type for r in matrix.rows] == sorted(r.model_type for r in matrix.rows)


def test_disagreement_compares_statuses_of_environments_that_have_the_cell():
    matrix = two_environments()
    assert sorted(r.model_type for r in matrix.rows if r.disagree) == ["detr", "llama", "llava", "whisper"]
    zamba = next(r for r in matrix.rows if r.model_type == "zamba")
    assert zamba.cells[0] is None and not zamba.disagree  # absent in one environment is not a disagreement


def test_first_result_of_a_cell_wins_like_the_csv(tmp_path):
    a = write_run(tmp_path / "a", [result("bert", "error", signature="first")])
    b = write_run(tmp_path / "b", [result("bert", "build")])
    matrix = build_matrix([read_run(a), read_run(b)])
    assert len(matrix.columns) == 1 and matrix.rows[0].cells[0].status == "error"


def test_counts_text_and_shares():
    counts = Counts.of(["build"] * 498 + ["refused"] * 4 + ["error"] * 55)
    assert counts_text(counts) == "498 build · 4 refused · 55 error"
    assert counts.total == 557 and failure_count(counts) == 59
    assert round(counts.share(498), 1) == 89.4


def test_column_summaries_cover_every_column():
    matrix = two_environments()
    summaries = column_summaries(matrix)
    assert len(summaries) == len(matrix.columns)
    assert sum(s.counts.total for s in summaries) == len(matrix.cells())


def test_failure_groups_are_most_common_first_with_their_model_types():
    groups = failure_groups(two_environments())
    assert groups[0].signature == "RuntimeError: cannot decorate <Name>: no forward"
    assert groups[0].count == 4 and groups[0].model_types == ("t5",)
    assert groups[0].columns == ("decorate/fixed", "decorate/legacy")
    assert all(not is_ok(s) for g in groups for s in g.statuses)
    assert [g.count for g in groups] == sorted((g.count for g in groups), reverse=True)


def test_chart_segments_fill_each_bar():
    counts = Counts.of(["build"] * 3 + ["error"])
    chart = horizontal_bars([("env", counts)], "t", width=500, label_width=100)
    assert round(sum(s.width for s in chart.segments)) == 500 - 100 - 60
    tall = vertical_bars([("n1", counts), ("n2", Counts.of(["build"] * 2))], "t")
    heights = [s.height for s in tall.segments]
    assert round(sum(heights[:2])) == round(tall.height - 100)  # the peak bar spans the plot


def test_a_cell_keeps_every_row_that_claimed_it_and_the_first_decides(tmp_path):
    a = write_run(tmp_path / "a", [result("bert", "error", signature="RuntimeError: first"),
                                   result("bert", "build")])
    b = write_run(tmp_path / "b", [result("bert", "timeout", message="timeout after 300 s")])
    cell = build_matrix([read_run(a), read_run(b)]).rows[0].cells[0]
    assert [r.status for r in cell.results] == [Status.ERROR, Status.BUILD, Status.TIMEOUT]
    assert cell.result is cell.results[0] and cell.status is Status.ERROR
    assert cell.message == "RuntimeError: first" and cell.signature == "RuntimeError: first"
