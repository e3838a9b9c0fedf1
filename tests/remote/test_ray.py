"""The by-value round trip through a task on a local Ray cluster (loopback only)."""

import importlib.util
import tempfile

import pytest

from auditor.core.hints import install_hint
from auditor.remote.byvalue import Parcel
from tests.remote.conftest import twin_of


def test_without_ray_the_column_says_how_to_get_it(monkeypatch):
    import importlib.util

    from auditor.remote import ray_trip

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert ray_trip.ray_missing() == f"Ray is not installed ({install_hint('ray')})"


def test_a_remote_code_config_round_trips_through_a_ray_task():
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    from auditor.remote.ray_trip import RayTrip
    from auditor.remote.receiver import canonical_dict

    trip = RayTrip()
    try:
        twin = twin_of("llava")
        facts = trip.round_trip(Parcel(twin))
    finally:
        trip.close()
    assert facts["class"].startswith("transformers_modules.llava_hyphen_3_dot_5_hyphen_Twin.")
    assert facts["dict"] == canonical_dict(twin)
    assert facts["dynamic_modules"] == []


def test_without_the_sweep_s_cluster_every_round_trip_says_why(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    from auditor.checks.pickling import _failure_of
    from auditor.core.status import Status
    from auditor.remote.ray_trip import RayTrip, RayUnavailable, _announce

    announcement = str(tmp_path / "cluster.json")
    _announce(announcement, error="RayClusterError: the sweep's local Ray cluster did not start: no ports")
    trip = RayTrip(cluster=announcement)
    for _ in range(2):  # not retried per model type
        with pytest.raises(RayUnavailable) as caught:
            trip.round_trip(Parcel(twin_of("llama")))
        failure = _failure_of(caught.value)
        assert failure.status is Status.ERROR
        assert "the sweep's local Ray cluster did not start: no ports" in failure.message


def test_a_sweep_cluster_that_cannot_start_says_why_in_every_round_trip():
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    from auditor.remote.ray_trip import LocalCluster, RayTrip, RayUnavailable

    cluster = LocalCluster(cpus=-1)  # Ray itself refuses a negative CPU count, in the helper
    try:
        trip = RayTrip(cluster=cluster.start())
        for _ in range(2):
            with pytest.raises(RayUnavailable, match=r"did not start: ValueError: Resource quantities must be "
                                                     r"nonnegative"):
                trip.round_trip(Parcel(twin_of("llama")))
        cluster._process.join(30)
        assert cluster._process.exitcode == 0  # the helper said why and ended
    finally:
        cluster.close()


def test_a_cluster_that_never_says_anything_is_waited_for_a_bounded_time(tmp_path):
    from auditor.remote.ray_trip import RayUnavailable, await_cluster

    with pytest.raises(RayUnavailable, match=r"did not say within 0.2 s whether it started"):
        await_cluster(str(tmp_path / "never-written.json"), timeout=0.2)


_A_WORKER_JOINS = """
import json, os, sys
from auditor.remote.ray_trip import join
import ray

@ray.remote(num_cpus=1)
def cache_of_a_ray_worker():
    cache = os.environ.get("HF_MODULES_CACHE", "")
    return cache, sorted(os.listdir(cache)) if cache and os.path.isdir(cache) else None

join(sys.argv[1])
cache, contents = ray.get(cache_of_a_ray_worker.remote(), timeout=120)
print(json.dumps({"address": ray.get_runtime_context().gcs_address, "cache": cache, "contents": contents}))
ray.shutdown()
"""


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed (the optional extra 'ray')")
def test_the_sweep_s_cluster_gives_its_ray_workers_an_empty_modules_cache_of_their_own():
    import json
    import os
    import subprocess
    import sys

    import psutil

    from auditor.remote.ray_trip import LocalCluster

    cluster = LocalCluster(cpus=1)
    announcement = cluster.start()  # returns at once: the helper process starts the cluster
    try:
        # A process started afterwards joins it, as each worker of a sweep does.
        joined = subprocess.run([sys.executable, "-c", _A_WORKER_JOINS, announcement], capture_output=True,
                                text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        helper = psutil.Process(cluster._process.pid)
    finally:
        cluster.close()
    assert joined.returncode == 0, joined.stderr[-3000:]
    found = json.loads(joined.stdout.strip().splitlines()[-1])
    assert found["address"].startswith("127.0.0.1:")
    cache = found["cache"]
    assert cache.startswith(tempfile.gettempdir()) and "/auditor-" in cache and "ray-cluster-" in cache
    assert found["contents"] == []  # empty: nothing of the parent's (or the user's) remote code is there
    assert cache != os.environ.get("HF_MODULES_CACHE") and not os.path.exists(cache)  # removed with the cluster
    assert not helper.is_running() or helper.status() == psutil.STATUS_ZOMBIE
