"""Whose fault a lost worker is: the pool asks whether the sweep's Ray cluster (whose driver each
worker that ran the pickle check is) still answers before it blames the model type.

Cheap and real: announcements as LocalCluster writes them, and real sockets. The whole path (a
cluster killed mid-sweep, its workers lost with it, recorded as `auditor-error`) is
tests/sweeping/test_faults.py's Ray cluster test (slow)."""

from __future__ import annotations

import json
import socket

from auditor.remote.ray_trip import cluster_gone


def _announce(tmp_path, **fields) -> str:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(fields))
    return str(path)


def test_a_cluster_whose_gcs_does_not_answer_is_gone(tmp_path):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reason = cluster_gone(_announce(tmp_path, address=f"127.0.0.1:{port}"))
    assert reason.startswith("the sweep's local Ray cluster is gone (nothing answers at 127.0.0.1:")


def test_a_cluster_that_answers_is_not_blamed(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert cluster_gone(_announce(tmp_path, address=f"127.0.0.1:{server.getsockname()[1]}")) == ""


def test_a_cluster_that_never_started_had_no_drivers_to_lose(tmp_path):
    assert cluster_gone(_announce(tmp_path, error="RayClusterError: did not start")) == ""
    assert cluster_gone(str(tmp_path / "never-announced.json")) == ""
