"""SideSweep (sweeping/sides.py): the record of a side's sweep, one field per option declared
with `sides=True`, spelled by the sweep's own declarations."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from auditor.core.errors import InputError
from auditor.sweeping.options import BY_NAME, OPTIONS
from auditor.sweeping.sides import ORDER, SideSweep, side_sweep


def test_a_field_per_option_the_sides_take():
    assert {f.name for f in dataclasses.fields(SideSweep)} == {o.name for o in OPTIONS if o.sides}
    assert [f.name for f in dataclasses.fields(SideSweep)] == list(ORDER)
    assert SideSweep.__dataclass_params__.frozen


def test_nothing_given_spells_nothing():
    assert SideSweep().flags() == []


def test_every_field_given_is_spelled_in_order():
    sweep = side_sweep(output=Path("/o"), label="x", resume=True, overwrite=True, models=["a,b", "c"],
                       exclude="d", checks="build,decorate", policies=["legacy"], jobs=2, timeout=1.5,
                       allow_absent=True, executor="ray", ray_address="h:1", shard="1/2", checkpoints=["/c"],
                       weights_save=Path("/s"), weights_from=Path("/f"))
    words = sweep.flags()
    flags = [word for word in words if word.startswith("-")]
    assert flags == [BY_NAME[name].flag for name in ORDER for _ in range(2 if name == "models" else 1)]
    assert words[words.index("--models"):words.index("--exclude")] == ["--models", "a,b", "--models", "c"]
    assert words[words.index("--checks") + 1] == "build,decorate" and words[words.index("--timeout") + 1] == "1.5"


def test_an_option_the_sides_do_not_take_is_refused():
    with pytest.raises(InputError, match="not options of a side's sweep: device"):
        side_sweep(device="cpu")
    with pytest.raises(InputError, match="--checks '' names nothing"):
        side_sweep(checks="")
