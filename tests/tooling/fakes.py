"""The stand-in noxfile of the upgrade-check and `--engine` tests, put in place for one test."""

from __future__ import annotations

from pathlib import Path

from auditor.upgrade import runner

FAKE_NOXFILE = Path(__file__).with_name("fake_noxfile.py")


def use_fake_noxfile(tmp_path: Path, monkeypatch) -> Path:
    """A project in `tmp_path` with the stand-in noxfile (fake_noxfile.py: its sessions log to
    `tmp_path`/log.txt and copy base.jsonl/new.jsonl from there), pip as the installer, and the
    current directory `tmp_path`; returns `tmp_path`."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "noxfile.py").write_text(FAKE_NOXFILE.read_text())
    monkeypatch.setattr(runner, "NOXFILE", project / "noxfile.py")
    monkeypatch.setenv("FAKE_UPGRADE_DIR", str(tmp_path))
    monkeypatch.setenv("AUDITOR_INSTALLER", "pip")
    monkeypatch.chdir(tmp_path)
    return tmp_path
