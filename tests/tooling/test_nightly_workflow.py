"""The nightly workflow cannot run here: check that it parses and agrees with the noxfile."""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_the_atlas_is_carried_from_night_to_night_and_published_to_pages():
    jobs = load()["jobs"]
    atlas = jobs["atlas"]
    kept = atlas["env"]["AUDITOR_ATLAS"]
    assert "nox --session atlas" in commands(atlas)
    steps = {step.get("uses", "").split("@")[0]: step for step in atlas["steps"] if step.get("uses")}
    assert steps["actions/cache/restore"]["with"]["path"] == steps["actions/cache/save"]["with"]["path"] == kept
    assert steps["actions/upload-pages-artifact"]["with"]["path"] == f"{kept}/site"
    assert any(step.get("uses", "").startswith("actions/deploy-pages@") for step in jobs["pages"]["steps"])
    assert jobs["pages"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_the_atlas_steps_run_locally_on_two_nights(tmp_path):
    """The atlas job's own command, run here on two committed nights (transformers 5.24.0, then
    5.25.0), each `nox -s atlas` adding one night to the atlas the night before left: the site's
    index names both nights' transformers. On this interpreter (--no-venv --no-install): the
    session's install is the nightly's business."""
    import os
    import shlex
    import subprocess
    import sys

    job = load()["jobs"]["atlas"]
    command = next(step["run"] for step in job["steps"] if "nox --session atlas" in step.get("run", ""))
    kept = tmp_path / job["env"]["AUDITOR_ATLAS"]
    env = {**os.environ, **job["env"], "AUDITOR_ATLAS": str(kept), "HF_HUB_OFFLINE": "1",
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    nights = ROOT / "tests" / "fixtures" / "nights"
    for night in ("5.24.0", "5.25.0"):
        argv = [sys.executable, "-m", *shlex.split(command), "--noxfile", str(ROOT / "noxfile.py"), "--no-venv",
                "--no-install", "--", str(nights / night)]
        ran = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, ran.stderr[-3000:]
    index = (kept / "site" / "index.html").read_text(encoding="utf-8")
    assert "5.24.0" in index and "5.25.0" in index
    import duckdb

    connection = duckdb.connect(str(kept / "atlas.duckdb"), read_only=True)
    try:
        assert connection.execute("SELECT transformers FROM runs ORDER BY seq").fetchall() == [("5.24.0",), ("5.25.0",)]
    finally:
        connection.close()
