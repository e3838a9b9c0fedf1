"""The project's noxfile: its sessions, and a Python without an interpreter skipped rather than failed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]


def nox(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_nox_list_shows_a_sweep_per_python_version_and_the_other_sessions():
    listing = nox("--list")
    assert listing.returncode == 0, listing.stderr
    sessions = re.findall(r"^[*-] (\S+)", listing.stdout, flags=re.MULTILINE)
    assert [s for s in sessions if s.startswith("sweep-")] == [f"sweep-{v}" for v in PYTHONS]
    assert {"report", "history", "upgrade_check(base)", "upgrade_check(new)", "tests", "lint"} <= set(sessions)
    # one session per engine release the emulation has a record of
    from auditor import engines

    for name in ("vllm", "sglang"):
        assert {f"{name}(release='{r.version}')" for r in engines.get(name).releases} <= set(sessions)
    assert re.search(r"^\* tests", listing.stdout, flags=re.MULTILINE)  # the default sessions


def _interpreter_found(version: str) -> bool:
    """What the noxfile's lookup would find (PATH plus pyenv's versions, as the noxfile sets it)."""
    probe = (f"import runpy; runpy.run_path({str(ROOT / 'noxfile.py')!r}); "
             f"from nox.virtualenv import _find_python; print(_find_python({version!r}) or '')")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    return bool(found.stdout.strip())


@pytest.mark.parametrize("ci", [False, True], ids=["local", "ci"])
def test_a_python_without_an_interpreter_is_skipped_not_failed(tmp_path, ci):
    if _interpreter_found("3.14"):
        pytest.skip("Python 3.14 is installed here: sweep-3.14 would run a real sweep")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"  # nox errors on missing interpreters on CI unless the noxfile says otherwise
    run = nox("--session", "sweep-3.14", "--envdir", str(tmp_path / "envs"), env=env)
    assert run.returncode == 0, run.stderr
    assert re.search(r"Session sweep-3\.14 skipped: Python interpreter 3\.14 not found", run.stderr), run.stderr
    assert not (tmp_path / "envs" / "sweep-3-14").exists()


def test_pyenv_interpreters_are_found_off_path():
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted({d.name.rsplit(".", 1)[0] for d in versions.glob("3.*.*") if (d / "bin").is_dir()}
                       & set(PYTHONS))
    if not installed:
        pytest.skip("no pyenv interpreters here")
    assert [v for v in installed if not _interpreter_found(v)] == []


def test_the_sides_noxfile_folder_shadows_no_standard_module():
    """nox runs from the noxfile's folder, and `python -m virtualenv` there puts it first on sys.path:
    a module of that folder named like a standard one (auditor/upgrade/bisect.py, when the sessions
    lived in auditor/upgrade/) broke every pip-backed side venv."""
    import sys

    from auditor.environments import runner

    names = {p.stem for p in runner.NOXFILE.parent.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    assert names and not names & set(sys.stdlib_module_names), names & set(sys.stdlib_module_names)


def test_a_reused_side_venv_is_cut_back_to_what_its_roots_need():
    """auditor/environments/sides/prune.py, on this venv's real metadata: the closure follows extras
    and markers (the test extra's pytest only with [test]); what no root needs is listed for
    removal (a side venv that held transformers 5.25.0 kept `kernels`, which broke every build
    under 5.0.0)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "auditor" / "environments" / "sides"))
    try:
        import prune
    finally:
        sys.path.pop(0)
    plain = prune.closure(["model-sweep-auditor", "torch", "transformers"])
    assert {"model-sweep-auditor", "torch", "transformers", "cloudpickle", "huggingface-hub"} <= plain
    assert "pytest" not in plain and "pytest" in prune.closure(["model-sweep-auditor[test]"])
    assert "pytest" in prune.unneeded(["model-sweep-auditor", "torch", "transformers"])
    assert "pytest" not in prune.unneeded(["model-sweep-auditor[test]", "torch", "transformers"])
