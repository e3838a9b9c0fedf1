"""`auditor upgrade-check` from a wheel install, run from an empty directory, as users run it.

The auditor's wheel is built from this checkout and installed into a fresh venv outside it; the
command then runs from an empty directory, so nothing of the checkout is on its path: its sides
install a wheel rebuilt from that installed distribution (auditor.environments.selfdist) and run the
nox sessions shipped inside the package. The fresh venv borrows the test interpreter's
dependencies (torch, nox, ...) through a .pth line rather than install 1.3 GB again; the auditor
itself is the wheel's (asserted). Its side venvs are the checkout's (AUDITOR_VENVS), shared with
test_upgrade_real and test_bisect_real: a warm run only swaps the auditor and transformers.

Slow: about a minute warm; the first run on a machine builds the two side venvs (minutes). It
starts in the background as the session begins (tests/upgrade/early.py). Skipped, saying so, where
PyPI cannot be reached.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from auditor.core.results import read_run
from auditor.environments.selfdist import checkout_root, venv_home
from tests.conftest import auditor_env
from tests.upgrade import early
from tests.upgrade.test_upgrade_real import need_nox_and_pypi

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("nox") is None, reason="needs nox")]


def _install_wheel(root: Path) -> Path:
    """A fresh venv, outside the checkout, with the auditor's wheel installed: its bin/auditor."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(checkout_root()), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(root / "dist")], check=True, capture_output=True)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "zz-borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next((root / "dist").glob("model_sweep_auditor-*.whl"))
    # Without PYTHONPATH: the checkout on it (its egg-info) would look installed to pip already.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True, capture_output=True, env=_without_checkout())
    return venv / "bin"


@early.job("wheel_run")
def _from_the_wheel(workdir: Path) -> tuple[Path, Path, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """Started as the session begins (tests/upgrade/early.py): the wheel installed, then
    upgrade-check from an empty directory; (its bin/, the empty directory, where `auditor`
    is imported from there, the upgrade-check)."""
    need_nox_and_pypi("the sides install transformers from it")
    installed = _install_wheel(workdir / "wheel")
    empty = workdir / "empty"
    empty.mkdir()
    where = subprocess.run([str(installed / "python"), "-c", "import auditor; print(auditor.__file__)"],
                           cwd=empty, capture_output=True, text=True, env=_without_checkout())
    run = _run(installed, empty, "upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "--models", "llama,gpt2",
               "--checks", "build")
    return installed, empty, where, run


@pytest.fixture
def wheel_run():
    return early.result("wheel_run")


def _without_checkout() -> dict[str, str]:
    return {k: v for k, v in auditor_env().items() if k != "PYTHONPATH"}


def _run(bin_dir: Path, cwd: Path, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    env = {**_without_checkout(), "AUDITOR_VENVS": str(venv_home())}
    return subprocess.run([str(bin_dir / "auditor"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_upgrade_check_from_a_wheel_in_an_empty_directory(wheel_run):
    installed, empty, where, run = wheel_run
    assert where.stdout.startswith(str(installed.parent)), where  # the wheel's auditor, not the checkout's
    assert run.returncode in (0, 1), run.stderr[-4000:]
    out = empty / "reports" / "upgrade-5.17.0-to-5.18.0"
    assert "model-sweep-auditor @ file:" in run.stderr  # the sides installed the rebuilt wheel
    assert "## Config drift" in (out / "diff.md").read_text()
    for side, version in (("base", "5.17.0"), ("new", "5.18.0")):
        sweep = read_run(out / side)
        assert sweep.info.transformers == version
        assert sweep.info.git_revision == "unknown"  # not a checkout's auditor: the wheel's
        assert {r.model_type for r in sweep.results} == {"llama", "gpt2"}
        assert all(r.status.ok for r in sweep.results), [(r.model_type, r.message) for r in sweep.results]
