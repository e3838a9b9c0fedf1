"""The by-value round trip through a task on a local Ray cluster (loopback only)."""

import tempfile

import pytest

from auditor.remote.byvalue import Parcel
from tests.pickling.conftest import twin_of


def test_without_ray_the_column_says_how_to_get_it(monkeypatch):
    import importlib.util

    from auditor.remote import ray_trip

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert ray_trip.ray_missing() == "Ray is not installed (pip install 'model-sweep-auditor[ray]')"


def test_a_remote_code_config_round_trips_through_a_ray_task():
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    from auditor.receiver import canonical_dict
    from auditor.remote.ray_trip import RayTrip

    trip = RayTrip()
    try:
        twin = twin_of("llava")
        facts = trip.round_trip(Parcel(twin))
    finally:
        trip.close()
    assert facts["class"].startswith("transformers_modules.llava_hyphen_3_dot_5_hyphen_Twin.")
    assert facts["dict"] == canonical_dict(twin)
    assert facts["dynamic_modules"] == []


def test_without_the_sweep_s_cluster_every_round_trip_says_why():
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    from auditor.checks.pickling import _failure_of
    from auditor.remote.ray_trip import RayTrip, RayUnavailable
    from auditor.results import Status

    trip = RayTrip(unavailable="RayClusterError: the sweep's local Ray cluster did not start: no ports")
    for _ in range(2):  # not retried per model type
        with pytest.raises(RayUnavailable) as caught:
            trip.round_trip(Parcel(twin_of("llama")))
        failure = _failure_of(caught.value)
        assert failure.status is Status.ERROR
        assert "the sweep's local Ray cluster did not start: no ports" in failure.message


def test_the_sweep_s_cluster_gives_its_ray_workers_an_empty_modules_cache_of_their_own():
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    import os

    import ray

    from auditor.remote.ray_trip import LocalCluster

    @ray.remote(num_cpus=1)
    def cache_of_a_ray_worker():
        cache = os.environ.get("HF_MODULES_CACHE", "")
        return cache, sorted(os.listdir(cache)) if cache and os.path.isdir(cache) else None

    cluster = LocalCluster(cpus=1)
    address = cluster.start()  # this process is now connected to it, as the sweep's parent is
    try:
        cache, contents = ray.get(cache_of_a_ray_worker.remote(), timeout=120)
    finally:
        cluster.close()
    assert address.startswith("127.0.0.1:")
    assert cache.startswith(tempfile.gettempdir()) and "/auditor-" in cache and "ray-modules-" in cache
    assert contents == []  # empty: nothing of the parent's (or the user's) remote code is there
    assert cache != os.environ.get("HF_MODULES_CACHE") and not os.path.exists(cache)  # removed with the cluster
