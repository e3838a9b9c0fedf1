"""scripts/link_shared.py, which lets CI's two engine venvs hold one copy of the CUDA stack they both
pin: real venvs, real pip, wheels written here (no index needed)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "link_shared.py"


def _wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of `files` (path -> text), as a build backend writes one."""
    info = f"{name}-{version}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in contents.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def _pip(python: Path | str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=300)


def test_a_shared_package_is_installed_once_on_disk_and_stays_when_one_venv_removes_it(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "sharedlib", "1.0", {"sharedlib/__init__.py": "VALUE = 42\n"})
    # A distribution the venv already has (its own pip): left as the venv has it.
    _wheel(wheels, "pip", "0.0.1", {"pip/__init__.py": "raise SystemExit('not the venv pip')\n"})
    shared = tmp_path / "shared"
    proc = _pip(sys.executable, "install", "-q", "--no-index", "--no-deps", "--target", str(shared),
                *map(str, sorted(wheels.glob("*.whl"))))
    assert proc.returncode == 0, proc.stderr

    envs = [tmp_path / "a", tmp_path / "b"]
    for env in envs:
        venv.create(env, with_pip=True)
        linked = subprocess.run([str(env / "bin" / "python"), str(SCRIPT), str(shared)],
                                capture_output=True, text=True, timeout=60)
        assert linked.returncode == 0, linked.stderr
        assert "1 distributions" in linked.stderr, linked.stderr

    source = shared / "sharedlib" / "__init__.py"
    assert source.stat().st_nlink == 3  # the shared folder and both venvs: one copy on disk
    for env in envs:
        # pip sees it installed (an engine's requirement on it is met), and it imports
        listed = _pip(env / "bin" / "python", "show", "sharedlib")
        assert listed.returncode == 0 and "Version: 1.0" in listed.stdout, listed.stderr
        run = subprocess.run([str(env / "bin" / "python"), "-c", "import sharedlib; print(sharedlib.VALUE)"],
                             capture_output=True, text=True, timeout=60)
        assert run.stdout.strip() == "42", run.stderr
        # the venv's own pip is its own, not the shared folder's
        assert "Version: 0.0.1" not in _pip(env / "bin" / "python", "show", "pip").stdout

    # One venv removes (or upgrades) it: the other keeps its files, byte for byte.
    removed = _pip(envs[0] / "bin" / "python", "uninstall", "-y", "sharedlib")
    assert removed.returncode == 0, removed.stderr
    kept = subprocess.run([str(envs[1] / "bin" / "python"), "-c", "import sharedlib; print(sharedlib.VALUE)"],
                          capture_output=True, text=True, timeout=60)
    assert kept.stdout.strip() == "42", kept.stderr
    assert source.read_text() == "VALUE = 42\n" and source.stat().st_nlink == 2


def test_a_missing_shared_folder_shares_nothing_and_fails_nothing(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "absent")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "nothing shared" in proc.stderr
