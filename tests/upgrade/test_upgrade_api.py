"""The runners of bisect, versions and upgrade-check as a Python API: outcomes returned, progress
told to an SideEvents, bad input an InputError before any install, nothing printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import upgrade
from auditor.core.errors import InputError
from auditor.environments.runner import SideEvents
from tests.upgrade.test_bisect_versions_cli import COLUMN, VERSIONS, added_in, fake  # noqa: F401  (fixture)


class Recorder(SideEvents):
    def __init__(self) -> None:
        self.steps = []

    def step(self, step) -> None:
        self.steps.append((step.action, step.side.name))


def test_bisect_releases_returns_where_the_cell_changed(fake, tmp_path, capsys):  # noqa: F811
    fake(added_in("5.15.0"))
    probe = upgrade.bisect_probe("granite_swa", COLUMN, outdir=tmp_path / "runs")
    events = Recorder()
    found = upgrade.bisect_releases(probe, "5.13.0", "5.18.0", events)
    assert found.outcome.found and found.outcome.first_bad == "5.15.0"
    assert found.states["5.14.1"].absent and not found.skipped
    assert events.steps[:2] == [("install", "5.13.0"), ("sweep", "5.13.0")]
    assert capsys.readouterr().out == ""


def test_versions_returns_the_report_of_every_release(fake, tmp_path):  # noqa: F811
    fake(VERSIONS)
    plan = upgrade.plan_versions("5.20.0,5.24.0", checks="build", output="out")
    assert plan.releases == ("5.20.0", "5.24.0") and plan.outdir == tmp_path / "out"
    report = upgrade.run_versions(plan)
    assert report.releases == ("5.20.0", "5.24.0")
    assert {p.name for p in report.written} >= {"report.html", "minmax.csv", "minmax.html"}


@pytest.mark.parametrize(("call", "message"), [
    (lambda: upgrade.plan_versions("5.20.0", jobs=0), "--jobs must be at least 1"),
    (lambda: upgrade.bisect_probe("llama", "nope/x/legacy", outdir=Path("o")), "unknown check(s) nope"),
    (lambda: upgrade.plan_check("5.18.0", "5.18"), "nothing to compare"),
])
def test_bad_input_is_an_input_error(fake, call, message):  # noqa: F811
    fake({})
    with pytest.raises(InputError) as raised:
        call()
    assert message in str(raised.value)
    assert fake.log() == []
