"""Shared by the pickling tests: one real receiver process, and configs with their twins."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "remote" / "tiny-llama-2.5"
KILLER = str(Path(__file__).parent / "plugins" / "receiver_killer.py")


def builtin_config(model_type: str):
    from auditor.models.meta import make_config

    return make_config(model_type)


def twin_of(model_type: str):
    from auditor.remote.twin import make_twin

    return make_twin(builtin_config(model_type), model_type)


@pytest.fixture(scope="module")
def receiver():
    """A real far side, started with spawn; shared by a module's tests (it costs an interpreter)."""
    from auditor.remote.receiver import Receiver

    far = Receiver()
    yield far
    far.close()
