"""The nightly workflow cannot run here: check that it parses and agrees with the noxfile."""

from __future__ import annotations

import ast

import yaml

from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"


def noxfile_pythons() -> list[str]:
    """PYTHONS of the noxfile, read without running it (running it changes PATH)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    return next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PYTHONS" for t in node.targets))


def load() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def commands(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_it_is_scheduled_and_sweeps_every_python_the_noxfile_has():
    workflow = load()
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as a boolean
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    sweep = workflow["jobs"]["sweep"]
    assert sweep["strategy"]["matrix"]["python"] == noxfile_pythons()
    assert 'nox --session "sweep-${{ matrix.python }}"' in commands(sweep)


def test_the_report_merges_indexes_the_history_and_uploads_html_and_csv():
    report = load()["jobs"]["report"]
    assert "nox --session report" in commands(report) and "nox --session history" in commands(report)
    uses = [step.get("uses", "") for step in report["steps"]]
    assert any(u.startswith("actions/cache/restore@") for u in uses)
    assert any(u.startswith("actions/cache/save@") for u in uses)
    upload = next(s for s in report["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert "*.html" in upload["with"]["path"] and "*.csv" in upload["with"]["path"]
    assert upload["if"] == "always()"
