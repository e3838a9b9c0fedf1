"""A merged report says every way its environments differ (the variable a reader would blame),
above the matrix, in the column-group headers, next to the disagree view and in the summary,
and compares the environments side by side."""

from __future__ import annotations

from auditor.core.results import read_run
from auditor.report.environments import differences, group_labels, sentence, side_by_side
from auditor.report.markdown import render_summary
from auditor.report.matrix import build_matrix
from auditor.report.page import render_report
from tests.report.helpers import result, write_run


def _runs(tmp_path):
    # What the nox sweeps of one run gave before they shared a transformers: Python 3.10 got
    # 5.20.2, the others 5.24.0, and the matrix labelled the groups by Python only.
    py310 = write_run(tmp_path / "py3.10", [result("bert", "build"), result("llama", "build")],
                      label="py3.10", python="3.10.13", transformers="5.20.2")
    py311 = write_run(tmp_path / "py3.11", [result("bert", "refused", signature="TypeError: x"),
                                            result("llama", "build")],
                      label="py3.11", python="3.11.7", transformers="5.24.0")
    return [read_run(py310), read_run(py311)]


def test_the_differences_name_every_variable(tmp_path):
    runs = _runs(tmp_path)
    found = differences(runs)
    assert [d.variable for d in found] == ["Python", "transformers"]
    assert sentence(found) == "Python (3.10.13, 3.11.7) and transformers (5.20.2, 5.24.0)"
    assert group_labels(found)["py3.10"] == "Python 3.10.13 · transformers 5.20.2"
    assert differences(runs[:1]) == ()


def test_the_report_shows_them_where_a_reader_compares(tmp_path):
    html = render_report(_runs(tmp_path))
    assert "These environments differ in Python (3.10.13, 3.11.7) and transformers (5.20.2, 5.24.0)." in html
    assert "more than one variable changes at once" in html
    assert html.count("Python 3.10.13 · transformers 5.20.2") >= 2  # matrix group header, side-by-side header
    assert 'id="disagree-variables">(they differ in Python' in html
    one = render_report(_runs(tmp_path)[:1])
    assert "env-differences" not in one and "side-by-side" not in one


def test_side_by_side_marks_the_columns_whose_counts_differ(tmp_path):
    rows = {row.column: row for row in side_by_side(build_matrix(_runs(tmp_path)))}
    assert rows["build"].differ
    assert [dict(c.items) for c in rows["build"].counts] == [{"build": 2}, {"build": 1, "refused": 1}]
    html = render_report(_runs(tmp_path))
    assert 'data-column="build" data-differ="1"' in html


def test_the_markdown_summary_names_them_too(tmp_path):
    text = render_summary(_runs(tmp_path))
    assert "The environments differ in Python (3.10.13, 3.11.7) and transformers (5.20.2, 5.24.0)" in text


def test_a_report_across_releases_has_the_pass_range_table(tmp_path):
    """The min/max table a model registry keeps by hand, in report.html of any merged run
    whose environments are transformers releases (as `auditor versions` writes them)."""
    old = write_run(tmp_path / "a", [result("llama", "build"), result("bert", "error", signature="E: x")],
                    label="a", transformers="5.17.0")
    new = write_run(tmp_path / "b", [result("llama", "build"), result("bert", "build"), result("gte", "build")],
                    label="b", transformers="5.18.0")
    html = render_report([read_run(old), read_run(new)])
    assert 'id="pass-ranges"' in html and "of 3 cells, 1 are in every release and pass in each" in html
    rows = {m: html.split(f'<tr data-model="{m}" data-column="build">', 1)[1].split("</tr>", 1)[0]
            for m in ("bert", "gte")}
    assert "<td>5.18.0</td><td>5.18.0</td>" in rows["bert"]  # lowest and highest pass
    assert rows["gte"].endswith("<td>5.17.0</td>")  # absent in the older release: its minimum is 5.18.0
    assert 'data-model="llama" data-column="build">' not in html.split('id="pass-ranges"', 1)[1].split("</section>", 1)[0]
    assert 'id="pass-ranges"' not in render_report([read_run(old)])
