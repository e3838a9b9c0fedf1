"""The templates ship in the wheel as auditor/templates, and every package is listed in pyproject."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_every_package_under_auditor_is_listed_in_pyproject():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "auditor").rglob("__init__.py")}
    listed = set(config["packages"])
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages"
    assert config["package-dir"]["auditor.templates"] == "templates"


@pytest.mark.slow
def test_wheel_ships_the_templates(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "auditor", source / "auditor", ignore=ignore)
    shutil.copytree(REPO / "templates", source / "templates", ignore=ignore)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "-w", str(tmp_path / "wheel"), "--no-deps",
         "--no-build-isolation", "-q"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {p.name for p in (REPO / "templates").iterdir() if p.is_file()}
    assert {f"auditor/templates/{t}" for t in templates} <= names
    assert not any(n.startswith("templates/") for n in names)

    # An installed copy (no checkout beside it) renders from its own templates.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("from auditor.report.templating import template_dirs; import sys; "
             "print(template_dirs()[0]); from auditor.report.page import render_report")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == site / "auditor" / "templates"
