"""`auditor upgrade-check` for real: two nox venvs with two transformers releases from PyPI.

Slow: the first run on a machine installs two venvs from PyPI (about 1.3 GB and 2 minutes each);
later runs reuse them (.nox/upgrade_check-base and -new) and take about a minute. Skipped, saying
so, where PyPI cannot be reached.
"""

from __future__ import annotations

import importlib.util
import urllib.request

import pytest

from auditor.core.results import read_run
from tests.conftest import run_auditor

pytestmark = pytest.mark.slow

BASE, NEW = "5.23.0", "5.24.0"
MODELS = {"bert", "gpt2", "llama"}


def pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/transformers/", timeout=15):
            return True
    except OSError:
        return False


@pytest.mark.skipif(importlib.util.find_spec("nox") is None, reason="needs nox")
def test_upgrade_check_between_two_releases(tmp_path):
    if not pypi_reachable():
        pytest.skip("PyPI cannot be reached: the two sides install transformers from it")
    out = tmp_path / "upgrade"
    run = run_auditor("upgrade-check", "--from", BASE, "--to", NEW, "--models", ",".join(sorted(MODELS)),
                      "--checks", "build,decorate", "--jobs", "2", "-o", str(out), timeout=1500)
    assert run.returncode in (0, 1), run.stderr[-4000:]
    assert ("0 regressions" in run.stdout) == (run.returncode == 0), run.stdout
    for name in ("diff.md", "diff.html", "report.html", "matrix.csv", "base/report.html", "new/report.html"):
        assert (out / name).is_file(), name
    for side, version in (("base", BASE), ("new", NEW)):
        sweep = read_run(out / side)
        assert sweep.info.transformers == version
        assert sweep.info.label == f"{side}: transformers {version}"
        assert {r.model_type for r in sweep.results} == MODELS
        assert {r.check for r in sweep.results} == {"build", "decorate"}
