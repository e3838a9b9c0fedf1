"""The stand-in noxfile of the upgrade-check and `--engine` tests, put in place for one test."""

from __future__ import annotations

from pathlib import Path

from auditor.environments import runner
from auditor.environments.releases import parse_index_versions

FAKE_NOXFILE = Path(__file__).with_name("fake_noxfile.py")
# The package index's transformers releases as `pip index versions` listed them (5.24.0 the newest):
# what the tests that stand in for the index give `releases.index_releases`.
RECORDED_RELEASES = tuple(parse_index_versions(
    (Path(__file__).resolve().parents[1] / "fixtures" / "upgrade" / "pip-index-versions.txt").read_text()))


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
