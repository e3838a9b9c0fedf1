"""`auditor bisect` for real: transformers releases from the package index in the reused venv
.nox/upgrade_check-new/ (upgrade-check's new side, which test_upgrade_real then reuses).

Slow: the first run on a machine builds the venv (about 1.3 GB and 2 minutes); later runs only
switch its transformers. `granite_swa` arrived in 5.15.0, so between 5.14.1 and 5.15.1 its build
cell goes from absent to build: three installs (the two ends and 5.15.0). The bisection starts in
the background as the session begins (tests/upgrade/early.py); the test asserts on its result.
Skipped, saying so, where the index cannot be reached.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_auditor
from tests.upgrade import early
from tests.upgrade.test_upgrade_real import need_nox_and_pypi, pypi_reachable

pytestmark = pytest.mark.slow


@early.job("bisect_run")
def _bisect(workdir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """Started as the session begins (tests/upgrade/early.py)."""
    need_nox_and_pypi("the bisection installs transformers from it")
    out = workdir / "bisect"
    return run_auditor("bisect", "granite_swa", "build", "--good", "5.14.1", "--bad", "5.15.1",
                       "-o", str(out), timeout=900), out


@pytest.fixture
def bisect_run() -> tuple[subprocess.CompletedProcess, Path]:
    return early.result("bisect_run")


def test_bisect_finds_the_release_that_added_a_model_type(bisect_run):
    run, out = bisect_run
    assert run.returncode == 0, run.stderr[-4000:]
    assert "granite_swa build: first changed in transformers 5.15.0" in run.stdout, run.stdout
    assert "  5.14.1: absent (no such model type)" in run.stdout
    assert "  5.15.0: build: build (" in run.stdout
    assert "3 releases installed (the 2 ends and 1 bisection step) of the 2 after 5.14.1 up to 5.15.1" in run.stdout
    for release in ("5.14.1", "5.15.0", "5.15.1"):
        assert (out / release / "results.jsonl").is_file()


def test_an_unknown_release_exits_2_before_any_install(tmp_path):
    if not pypi_reachable():
        pytest.skip("PyPI cannot be reached: the release list comes from it")
    run = run_auditor("bisect", "granite_swa", "build", "--good", "5.14.1", "--bad", "5.15.7",
                      "-o", str(tmp_path / "bisect"))
    assert run.returncode == 2
    assert "transformers 5.15.7 is not a release on the package index; nearest: 5.15.1, 5.16.0" in run.stderr
    assert not (tmp_path / "bisect").exists()
