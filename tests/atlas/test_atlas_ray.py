"""`auditor atlas --executor ray` on a real cluster of `ray start` processes on this machine: each
run is one task that makes its venv on its node, and a node killed mid-run loses only that run.

The cluster's own Python imports another transformers (5.24.0, first on its PYTHONPATH) than
the caller's, as a cluster started from another venv: the atlas it gives must still equal the
one the same grid gives without Ray, each run in its own release."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ray_nodes import Cluster, env, transformers_elsewhere

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("ray", reason="Ray is not installed (the optional extra: pip install -e '.[ray]')")

ROOT = Path(__file__).resolve().parents[2]
GRID = ("--transformers", "5.24.0,5.25.0", "--models", "deepseek_v3,falcon,gpt2,zamba", "--checks", "build,backend")
COMPARED = ("SELECT * FROM verdicts", "SELECT * FROM first_broken")


def atlas(directory: Path, *args: str, extra_env: dict | None = None, popen: bool = False):
    argv = [sys.executable, "-m", "auditor", "atlas", str(directory), *GRID, *args]
    environ = {**env(), **(extra_env or {})}
    if popen:
        return subprocess.Popen(argv, cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600)


def rows(directory: Path, sql: str) -> list[tuple]:
    connection = duckdb.connect(str(directory / "atlas.duckdb"), read_only=True)
    try:
        return sorted(connection.execute(sql).fetchall(), key=repr)
    finally:
        connection.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head that runs no task (0 CPUs) and two nodes of 1 CPU, all with transformers 5.24.0
    first on their Python's path."""
    elsewhere = str(transformers_elsewhere("5.24.0", tmp_path_factory.mktemp("site")))
    with Cluster() as started:
        started.start(cpus=0, PYTHONPATH=elsewhere)
        started.join("a", cpus=1, PYTHONPATH=elsewhere)
        started.join("b", cpus=1, PYTHONPATH=elsewhere)
        yield started


def _sweeping_node(cluster: Cluster, deadline: float) -> tuple[str, str]:
    """The node whose task is in its sweep (the venv's `auditor sweep` running there), and the
    release it sweeps (its run folder is named after it)."""
    while time.monotonic() < deadline:
        for name in ("a", "b"):
            for proc in cluster.processes(name):
                words = _cmdline(proc)
                if "sweep" in words and "--output" in words:
                    return name, Path(words[words.index("--output") + 1]).name.split("-")[0]
        time.sleep(0.5)
    raise AssertionError("no node's sweep started within the deadline")


def _cmdline(proc) -> list[str]:
    try:
        return proc.cmdline()
    except Exception:  # gone meanwhile
        return []


def test_a_node_killed_mid_grid_loses_only_its_run_and_the_atlas_equals_the_one_without_ray(cluster, tmp_path):
    if __import__("importlib.metadata").metadata.version("transformers") == "5.24.0":
        pytest.skip("the caller has the cluster's transformers")
    local = atlas(tmp_path / "local", "--jobs", "1")
    assert local.returncode == 0, local.stderr

    on_ray = tmp_path / "ray"
    proc = atlas(on_ray, "--executor", "ray", "--ray-address", cluster.address, popen=True)
    killed, lost = _sweeping_node(cluster, time.monotonic() + 300)
    time.sleep(2)  # well into its run
    cluster.kill(killed)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert "2 releases swept" in stdout, stdout

    # Each run once (the lost one too, run again on the other node), in its own release, though
    # every node's Python has transformers 5.24.0.
    assert lost in ("5.24.0", "5.25.0")
    assert rows(on_ray, "SELECT transformers, count(*) FROM runs GROUP BY transformers") == [("5.24.0", 1),
                                                                                           ("5.25.0", 1)]
    for sql in COMPARED:
        assert rows(on_ray, sql) == rows(tmp_path / "local", sql), sql
    assert rows(on_ray, "SELECT count(*) FROM first_broken")[0][0] > 0  # the grid has a change to find

    again = atlas(on_ray, "--executor", "ray", "--ray-address", cluster.address)
    assert again.returncode == 0, again.stderr
    assert "0 releases swept" in again.stdout and "2 already in the atlas" in again.stdout
