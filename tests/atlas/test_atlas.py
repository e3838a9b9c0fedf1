"""`auditor atlas`: real runs in, the database, the site.

One atlas for the module: a real sweep of three model types (build and backend) under the
transformers installed here, and a committed run of the same selection under 5.24.0
(tests/fixtures/atlas/5.24.0, swept for real in that release's venv: a second release without a
venv to make in CI). Between the two, vLLM's emulation starts serving falcon (stopped at its
registry gate under 5.24.0) and ergo is new in 5.25.0.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "atlas" / "5.24.0"
HERE = __import__("importlib.metadata").metadata.version("transformers")
MODELS = "ergo,falcon,gpt2,llama"  # the fixture run's selection


def atlas(directory: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "auditor", "atlas", str(directory), *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if HERE != "5.25.0":
        pytest.skip(f"the fixture's changes are those of 5.24.0 -> 5.25.0; transformers {HERE} here")
    directory = tmp_path_factory.mktemp("atlas")
    args = ("--add", str(FIXTURE), "--transformers", HERE, "--models", MODELS, "--checks", "build,backend",
            "--jobs", "1")
    first = atlas(directory, *args)
    assert first.returncode == 0, first.stderr
    second = atlas(directory, *args)
    return directory, first, second


def test_it_builds_the_database_and_the_site(built):
    directory, first, _ = built
    assert "1 release swept (5.25.0)" in first.stdout
    assert (directory / "atlas.duckdb").is_file()
    site = directory / "site"
    assert {p.name for p in (site / "types").iterdir()} == {f"{t}.html" for t in MODELS.split(",")}
    assert {p.name for p in (site / "releases").iterdir()} == {"5.24.0.html", "5.25.0.html"}
    run_folders = list((directory / "runs").iterdir())
    assert len(run_folders) == 1 and (run_folders[0] / "results.jsonl").is_file()


def test_a_second_identical_call_sweeps_nothing(built):
    directory, first, second = built
    assert second.returncode == 0, second.stderr
    assert "0 releases swept, 1 already in the atlas, 0 run(s) added" in second.stdout
    assert f"transformers {HERE}: in the atlas already, not swept again" in second.stderr
    # nor derived again: the derived tables are a function of the stored runs and the code, both unchanged
    assert "derive (unchanged)" in second.stdout and "derive (unchanged)" not in first.stdout
    connection = duckdb.connect(str(directory / "atlas.duckdb"), read_only=True)
    assert connection.execute("SELECT count(*) FROM runs").fetchone()[0] == 2


def test_verdicts_answer_from_the_file_alone(built):
    directory, _, _ = built
    copy = directory.parent / "alone.duckdb"  # the database without its folder: no run folder to read
    copy.write_bytes((directory / "atlas.duckdb").read_bytes())
    connection = duckdb.connect(str(copy), read_only=True)
    columns = [d[0] for d in connection.execute("SELECT * FROM verdicts LIMIT 0").description]
    assert columns == ["model_type", "engine", "engine_release", "emulated", "transformers", "torch", "python",
                       "verdict", "gate", "cause", "fault"]
    found = dict(((t, e, r), (v, g, f)) for t, e, r, v, g, f in connection.execute(
        "SELECT model_type, engine, transformers, verdict, gate, fault FROM verdicts").fetchall())
    assert found[("falcon", "vllm", "5.24.0")] == ("stops", "backend/registry", "engine")
    assert found[("falcon", "vllm", "5.25.0")] == ("servable", "", "")
    assert ("ergo", "vllm", "5.24.0") not in found and found[("ergo", "vllm", "5.25.0")][0] == "servable"
    # Every row of both runs is there, as results.jsonl held it.
    rows = connection.execute("SELECT count(*) FROM rows r JOIN runs USING (run_id) "
                              "WHERE runs.transformers = '5.24.0'").fetchone()[0]
    assert rows == sum(1 for line in (FIXTURE / "results.jsonl").read_text().splitlines()
                       if json.loads(line)["kind"] == "result")


def test_the_counts_are_the_change_models(built):
    """The release's counts are report/changes.py's, computed from the two runs read back."""
    from auditor.core.results import read_run
    from auditor.report.changes import changes

    directory, _, _ = built
    connection = duckdb.connect(str(directory / "atlas.duckdb"), read_only=True)
    lines = dict(connection.execute("SELECT engine, line FROM release_changes").fetchall())
    swept = read_run(next((directory / "runs").iterdir()))
    expected = {e.name: e.line for e in changes(read_run(FIXTURE), swept).engines}
    assert lines == expected
    assert "1 gained" in lines["vllm"] and "1 new type" in lines["vllm"]


def test_the_type_page_of_a_changed_type_names_the_release_gate_cause_and_fault(built):
    directory, _, _ = built
    page = (directory / "site" / "types" / "falcon.html").read_text()
    changed = page.split("Where its verdict changed", 1)[1].split("</table>", 1)[0]
    assert 'href="../releases/5.25.0.html"' in changed and "gained" in changed
    assert "backend/registry" in changed  # the gate that stopped it before
    assert "is not compatible with vLLM" in changed  # its cause
    assert "<td>engine</td>" in changed  # whose fault
    assert "auditor sweep --models falcon --checks backend" in page  # the command that sweeps it again
    # ... and under which release: pasted under another, it shows another answer
    assert re.search(r'<code class="repro">auditor sweep --models falcon --checks backend[^<]*</code> '
                     r'<small class="under">\(under transformers 5\.24\.0\)</small>', page)


def test_the_release_page_lists_new_types_and_the_counts(built):
    directory, _, _ = built
    page = (directory / "site" / "releases" / "5.25.0.html").read_text()
    assert re.search(r'New types: <a href="../types/ergo.html">ergo</a>', page)
    assert "vLLM 0.34.0: 1 gained, 1 new type (1 served) of 3" in page
    assert "Nothing to compare with" in (directory / "site" / "releases" / "5.24.0.html").read_text()


def test_the_index_carries_its_grid_and_loads_nothing_by_fetch(built):
    directory, _, _ = built
    site = directory / "site"
    index = (site / "index.html").read_text()
    grid = json.loads(re.search(r'<script type="application/json" id="atlas-grid">(.*?)</script>', index).group(1))
    vllm = next(t for t in grid["tracks"] if t["label"].startswith("vLLM"))
    assert [c[0] for c in vllm["cols"]] == ["5.24.0", "5.25.0"]
    assert dict(zip(grid["types"], vllm["rows"], strict=True))["falcon"] == "XS"
    assert dict(zip(grid["types"], vllm["rows"], strict=True))["ergo"] == ".S"
    for page in site.rglob("*"):
        if page.suffix in (".html", ".js"):
            assert "fetch(" not in page.read_text(), page


def test_first_broken_view(built):
    """No type lost a verdict between these two releases: the view is empty, and says so as a table."""
    directory, _, _ = built
    connection = duckdb.connect(str(directory / "atlas.duckdb"), read_only=True)
    columns = [d[0] for d in connection.execute("SELECT * FROM first_broken").description]
    assert columns == ["model_type", "engine", "engine_release", "emulated", "broken_in", "gate", "cause", "fault",
                       "fixed_in"]


def test_first_broken_and_fixed_in_across_three_releases(tmp_path):
    """The view over the change model's records: lost in one release, back in a later one.
    The records are written as derive.py writes them (no sweep: three releases need venvs)."""
    from auditor.atlas import store

    connection = store.connect(tmp_path / "atlas.duckdb")
    for order, release in enumerate(("5.23.0", "5.24.0", "5.25.0")):
        connection.execute("INSERT INTO environments VALUES (?, ?, '2.13.0', '3.11', '', ?)", [release, release, order])
    record = ["", "", "lineage", "vllm", "0.34.0", True, "", "llama", "", "", "", "backend/tp-plan", "model",
              "ValueError: no plan", "", ""]
    for release, kind in (("5.24.0", "lost"), ("5.25.0", "gained")):
        connection.execute(f"INSERT INTO changes VALUES ({', '.join('?' * len(record))})",
                           [release, "", *record[2:6], kind, *record[7:]])
    assert connection.execute("SELECT model_type, broken_in, gate, cause, fault, fixed_in FROM first_broken"
                              ).fetchall() == [("llama", "5.24.0", "backend/tp-plan", "ValueError: no plan", "model",
                                                "5.25.0")]


def test_bad_input_exits_2_before_any_sweep(tmp_path):
    result = atlas(tmp_path / "a", "--transformers", "five")
    assert result.returncode == 2 and "'five' is not a release" in result.stderr
    result = atlas(tmp_path / "a")
    assert result.returncode == 2 and "nothing to do" in result.stderr
    assert not (tmp_path / "a").exists()


def test_the_site_in_a_real_browser(built, page):
    """From the file system: the index draws its grid and the search box filters it; a type page
    shows its history (the page fixture fails on any script error or network request)."""
    directory, _, _ = built
    site = directory / "site"
    page.goto((site / "index.html").as_uri())
    assert page.locator("table.grid tbody tr").count() == 2 * len(MODELS.split(","))  # two engines
    # stopped by vLLM under 5.24.0, by SGLang under both
    assert page.locator('table.grid tr[data-type="falcon"] td.X').count() == 3
    page.fill("#search", "fal")
    assert page.locator("table.grid tbody tr:visible").count() == 2
    assert page.locator("#search-results a").first.inner_text() == "falcon"
    page.locator("#search-results a").first.click()
    page.wait_for_url("**/types/falcon.html")
    history = page.locator("section.track").first
    assert "gained" in history.locator("table.changes").inner_text()
    assert history.locator("table.history tbody tr").count() == 2
    page.goto((site / "releases" / "5.25.0.html").as_uri())
    page.locator('a[href="../types/ergo.html"]').first.click()
    page.wait_for_url("**/types/ergo.html")
