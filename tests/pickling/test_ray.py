"""The by-value round trip through a task on a local Ray cluster (loopback only)."""

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
