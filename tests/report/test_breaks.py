"""Graph breaks grouped by line across model types: the grouping on crafted runs, and the table in
report.html and summary.md of a real compile sweep of the plugin types that break
(tests/checks/compile/plugin_models.py: auditor_compile_break, and auditor_compile_break_twice, which
breaks at the same line and then again in plugin_helpers.py)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from auditor.core.extras import BreakOwner, GraphBreak
from auditor.core.results import read_run
from auditor.report.breaks import break_groups
from auditor.report.matrix import build_matrix
from tests.conftest import read_rows, run_auditor
from tests.report.helpers import result, write_run

COMPILE = Path(__file__).resolve().parents[1] / "checks" / "compile"
MASK = GraphBreak("Unsupported call | Explanation: why", "transformers/masking_utils.py", 40, "sdpa_mask")


def _broken(model_type: str, *breaks: GraphBreak, status: str = "graph-break", **extras):
    row = result(model_type, status, check="compile", component="decoder", policy="fixed")
    return replace(row, extras={"breaks": [b.as_extras() for b in breaks], **extras})


def test_types_that_break_at_one_line_are_one_group_most_types_first(tmp_path):
    own = GraphBreak("graph_break() | Explanation: user", "transformers/models/llama/modeling_llama.py", 9, "forward")
    rows = [_broken("llama", own, MASK, MASK),  # a cell meeting a line twice counts it once
            _broken("qwen2", MASK), _broken("mistral", replace(MASK, reason="another wording")),
            replace(result("gpt2", "error", check="compile", component="decoder", policy="fixed"),
                    extras={"break_reason": "not a break row"}),
            replace(result("old", "graph-break", check="compile", component="decoder", policy="fixed"),
                    extras={"break_reason": "x | y", "break_location": "transformers/masking_utils.py:40 in sdpa_mask"})]
    groups = break_groups(build_matrix([read_run(write_run(tmp_path / "run", rows))]))
    assert [(g.where, g.owner, g.model_types) for g in groups] == [
        ("transformers/masking_utils.py:40", BreakOwner.TRANSFORMERS, ("llama", "mistral", "old", "qwen2")),
        ("transformers/models/llama/modeling_llama.py:9", BreakOwner.MODEL, ("llama",)),
    ]
    assert groups[0].text() == ("4 types break at transformers/masking_utils.py:40 (transformers): "
                                "Unsupported call | Explanation: why")
    assert groups[0].columns == ("compile/decoder/fixed",) and groups[1].text().startswith("1 type breaks at")


def test_a_break_without_a_frame_is_grouped_by_its_reason(tmp_path):
    rows = [_broken(m, GraphBreak("no place | at all")) for m in ("a", "b")]
    (group,) = break_groups(build_matrix([read_run(write_run(tmp_path / "run", rows))]))
    assert (group.where, group.owner, group.count) == ("(no frame)", None, 2)
    assert group.text() == "2 types break at (no frame): no place | at all"


# -- a real sweep ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("breaks")
    proc = run_auditor("sweep", "--plugin", str(COMPILE / "plugin_models.py"), "--models", "auditor_compile_break.*",
                       "--checks", "compile", "--compile-ungated", "--device", "cpu", "--backend", "eager", "--jobs", "1",
                       "--timeout", "240", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _lines() -> tuple[int, int]:
    """The lines of the two breaks: the model's own (_Break.finish) and the helper's."""
    def after(path: Path, start: str) -> int:
        lines = path.read_text().splitlines()
        first = next(i for i, text in enumerate(lines) if text.startswith(start))
        return 1 + next(i for i in range(first, len(lines)) if "graph_break()" in lines[i])
    return after(COMPILE / "plugin_models.py", "class _Break("), after(COMPILE / "plugin_helpers.py", "def break_again(")


def test_the_sweep_lists_every_break_of_each_type(sweep):
    own, helper = _lines()
    rows = {row["model_type"]: row for row in read_rows(sweep)[1]}
    places = {m: [(b["file"], b["line"], b["function"], b["owner"]) for b in rows[m]["extras"]["breaks"]]
              for m in ("auditor_compile_break", "auditor_compile_break_twice")}
    models = str(COMPILE / "plugin_models.py")
    assert places == {
        "auditor_compile_break": [(models, own, "finish", "model")],
        "auditor_compile_break_twice": [(models, own, "finish", "model"),
                                        (str(COMPILE / "plugin_helpers.py"), helper, "break_again", "model")],
    }
    for row in rows.values():  # the first break stays where older readers look for it
        assert row["status"] == "graph-break" and row["extras"]["break_location"].endswith(f":{own} in finish")


def test_report_html_groups_the_breaks_by_line(sweep):
    own, helper = _lines()
    page = (sweep / "report.html").read_text()
    section = page.split('<section id="graph-breaks">', 1)[1].split("</section>", 1)[0]
    found = re.findall(r'<tr data-file="([^"]*)" data-line="(\d+)" data-owner="(\w+)" data-count="(\d+)"', section)
    assert found == [(str(COMPILE / "plugin_models.py"), str(own), "model", "2"),
                     (str(COMPILE / "plugin_helpers.py"), str(helper), "model", "1")]
    assert f"2 types break at {COMPILE / 'plugin_models.py'}:{own} (model): Call to" in section
    assert "auditor_compile_break, auditor_compile_break_twice" in section
    assert 'href="#graph-breaks"' in page


def test_summary_md_groups_the_breaks_by_line(sweep):
    own, helper = _lines()
    summary = (sweep / "summary.md").read_text()
    table = summary.split("**Graph breaks by line**", 1)[1].split("\n\n")[1]
    assert table.startswith("| types | break at | owner | reason | model types |")
    rows = table.splitlines()[2:]
    models = str(COMPILE / "plugin_models.py").replace("_", "\\_")  # Markdown, escaped as the summary does
    helpers = str(COMPILE / "plugin_helpers.py").replace("_", "\\_")
    assert rows[0].startswith(f"| 2 | {models}:{own} in finish | model | Call to \\`torch.\\_dynamo.graph\\_break()")
    assert rows[0].endswith("| auditor\\_compile\\_break, auditor\\_compile\\_break\\_twice |")
    assert rows[1].startswith(f"| 1 | {helpers}:{helper} in break\\_again | model |")
    assert len(rows) == 2
