"""The nightly report people trust: a timeline per cell in the history (page and CSV), expected
baselines, and the gate that fails only on confirmed, unexpected failures.

Three nights are three real sweeps of tests/plugins/flaky_models.py (the session's `flaky_sweeps`,
tests/conftest.py): auditor_flaky_flip fails, builds, fails; auditor_flaky_always fails every
night; auditor_flaky_fine builds. They ran side by side, so each night's header gets the start
time the nightly job would have stamped (02:00 UTC of its date); nothing else is changed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from auditor import engines
from auditor.cli import main
from auditor.report.baseline import parse_baseline
from tests.conftest import NIGHTS

FLIP, ALWAYS, FINE = "auditor_flaky_flip", "auditor_flaky_always", "auditor_flaky_fine"


@pytest.fixture(scope="module")
def history(flaky_sweeps, tmp_path_factory) -> Path:
    """A reports folder of the three nights, indexed by `auditor report --history`."""
    reports = tmp_path_factory.mktemp("nightly") / "history"
    for night in NIGHTS:
        outdir, proc = flaky_sweeps[night]
        assert proc.returncode == 1, proc.stderr  # --fail-on oom: auditor_flaky_always fails every night
        lines = (outdir / "results.jsonl").read_text().splitlines(keepends=True)
        header = json.loads(lines[0])
        header["run"]["started"] = f"{night}T02:00:00+00:00"
        (reports / night).mkdir(parents=True)
        (reports / night / "results.jsonl").write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert main(["report", "--history", str(reports)]) == 0
    return reports


def _timeline(reports: Path) -> list[dict[str, str]]:
    with (reports / "timeline.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_csv_has_each_changed_cell_night_by_night_with_its_environment(history):
    rows = _timeline(history)
    assert {row["model_type"] for row in rows} == {FLIP}  # the only cell that changed
    assert [(row["night"], row["status"], row["outcome"]) for row in rows] == [
        ("2026-11-01", "oom", "finding"), ("2026-11-02", "build", "pass"), ("2026-11-03", "oom", "finding")]
    header = json.loads((history / "2026-11-02" / "results.jsonl").read_text().splitlines()[0])["run"]
    for row in rows:
        assert (row["python"], row["torch"], row["transformers"]) == (
            header["python"], header["torch"], header["transformers"])
        recorded = sorted(header["engines"], key=lambda engine: engine["name"])  # EngineInfo records
        assert row["engines"] == " ".join(f"{e['name']}={e['version']}" for e in recorded)
        assert {pair.split("=")[0] for pair in row["engines"].split()} == set(engines.names())
        assert (row["first_failed"], row["failing_since"], row["flips"], row["flaky"]) == (
            "2026-11-01", "2026-11-03", "2", "true")


def test_the_history_page_shows_the_strip_in_chromium(history, page, tmp_path):
    page.goto((history / "index.html").as_uri())
    row = page.locator(f'tr[data-cell="{FLIP}/build"]')
    assert row.count() == 1
    marks = row.locator(".mark").evaluate_all(
        "marks => marks.map(m => [m.dataset.night, m.dataset.status, m.className])")
    assert marks == [["2026-11-01", "oom", "mark finding"], ["2026-11-02", "build", "mark pass"],
                     ["2026-11-03", "oom", "mark finding"]]
    assert row.locator(".first-failed").inner_text() == "2026-11-01"
    assert row.get_attribute("data-flips") == "2" and row.get_attribute("data-flaky") == "true"
    colours = {m.evaluate("m => getComputedStyle(m).backgroundColor") for m in row.locator(".mark").all()}
    assert len(colours) == 2  # a pass and a failure do not look alike
    assert page.locator(f'tr[data-cell="{ALWAYS}/build"]').count() == 0  # unchanged: no strip
    assert "Python" in page.locator("tr[data-run] td.versions").first.inner_text()
    page.screenshot(path=str(tmp_path / "history.png"), full_page=True)


def test_a_baseline_makes_the_identical_run_green_and_a_new_failure_still_fails(flaky_sweeps, tmp_path, capsys):
    first, second, third = (flaky_sweeps[night][0] for night in NIGHTS)
    expected = tmp_path / "expected.csv"
    assert main(["baseline", str(first), "-o", str(expected)]) == 0
    listed = parse_baseline(expected.read_text())
    assert {(e.model_type, e.column, e.status) for e in listed.entries} == {(ALWAYS, "build", "oom"), (FLIP, "build", "oom")}
    assert all(e.signature.startswith("MemoryError") and e.reason for e in listed.entries)

    # The third night is the first again (both types fail): green with the baseline, red without.
    assert main(["gate", str(third), "--expected", str(expected), "--markdown", str(tmp_path / "g1.md")]) == 0
    assert main(["report", str(third), "-o", str(tmp_path / "r"), "--fail-on", "oom", "--expected", str(expected)]) == 0
    assert main(["gate", str(third)]) == 1

    # A baseline of the second night (only auditor_flaky_always fails): the third night's failure is new.
    assert main(["baseline", str(second), "-o", str(expected)]) == 0
    capsys.readouterr()
    assert main(["gate", str(third), "--against", str(second), "--expected", str(expected),
                 "--markdown", str(tmp_path / "g2.md")]) == 1
    summary = (tmp_path / "g2.md").read_text()
    assert "Nightly gate FAILED" in summary and "#### New failures (1)" in summary and FLIP in summary
    assert ALWAYS not in summary.split("#### New failures")[1]
    assert "1 expected by the baseline" in summary


def test_the_gate_lists_fixed_and_flaky_cells_apart(flaky_sweeps, tmp_path, capsys):
    first, second = (flaky_sweeps[night][0] for night in list(NIGHTS)[:2])
    expected = tmp_path / "expected.csv"
    assert main(["baseline", str(first), "-o", str(expected)]) == 0
    capsys.readouterr()
    assert main(["gate", str(second), "--against", str(first), "--expected", str(expected), "--markdown", "-"]) == 0
    out, err = capsys.readouterr()
    fixed = out.split("#### Fixed (1)")[1]
    assert FLIP in fixed and "update it with `auditor baseline" in fixed
    assert "update it: auditor baseline" in err

    reruns = flaky_sweeps["reruns"][0]  # auditor_flaky_flip failed, then passed on its rerun
    assert main(["gate", str(reruns), "--markdown", "-"]) == 1  # auditor_flaky_always: a confirmed failure
    out, _ = capsys.readouterr()
    flaky = out.split("#### Flaky: failed, then passed on a rerun (1)")[1]
    assert FLIP in flaky and FLIP not in out.split("#### New failures")[1].split("####")[0]


@pytest.mark.parametrize("command", [["gate", "RUN"], ["diff", "RUN", "RUN"], ["report", "RUN", "--fail-on", "oom"],
                                     ["sweep", "--models", "llama", "-o", "RUN"]])
def test_a_baseline_that_is_not_one_is_refused_before_any_work(tmp_path, capsys, command):
    bad = tmp_path / "expected.csv"
    bad.write_text("model,status\nllama,error\n")
    words = [str(tmp_path / "run") if word == "RUN" else word for word in command]
    assert main([*words, "--expected", str(bad)]) == 2
    assert "the first line must be model_type,column,status,signature,reason" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
