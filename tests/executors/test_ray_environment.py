"""A row is computed where its header says: `auditor sweep --executor ray` against a real cluster
(`ray start` processes) whose workers import another transformers than the caller's."""

from __future__ import annotations

import pytest

from tests.conftest import read_rows, run_auditor
from tests.ray_nodes import Cluster, env, transformers_elsewhere

pytest.importorskip("ray", reason="Ray is not installed (the optional extra: pip install -e '.[ray]')")

OTHER = "5.24.0"  # the cluster's transformers; the caller has the locked 5.25.0


@pytest.fixture(scope="module")
def other_cluster(tmp_path_factory):
    """One node whose Python imports transformers OTHER first (PYTHONPATH of `ray start`): its
    workers run another release than the driver, as a cluster started from another venv does."""
    from importlib import metadata

    if metadata.version("transformers") == OTHER:
        pytest.skip(f"the caller has transformers {OTHER} itself")
    elsewhere = transformers_elsewhere(OTHER, tmp_path_factory.mktemp("site"))
    with Cluster() as cluster:
        yield cluster.start(cpus=1, PYTHONPATH=str(elsewhere))


def test_a_worker_of_another_transformers_stops_the_sweep_naming_both(other_cluster, tmp_path):
    from importlib import metadata

    here = metadata.version("transformers")
    out = tmp_path / "out"
    proc = run_auditor("sweep", "--executor", "ray", "--ray-address", other_cluster, "--models", "gpt2,llama",
                       "--checks", "build", "-o", str(out), env=env(), timeout=300)
    assert proc.returncode == 3, proc.stderr
    assert f"transformers {OTHER} (the run's header: {here})" in proc.stderr, proc.stderr
    header, rows = read_rows(out)
    assert header["run"]["transformers"] == here
    assert rows == []  # not one row of the other release under this header

