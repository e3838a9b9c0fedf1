"""`auditor upgrade-check` end to end through real nox processes, with a stand-in noxfile whose
sessions copy prepared results instead of building venvs and sweeping; and its bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.cli import main
from auditor.environments import releases, runner
from auditor.environments.selfdist import checkout_root
from tests.report.helpers import result, write_run
from tests.upgrade.fakes import RECORDED_RELEASES, use_fake_noxfile


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A project with the stand-in noxfile and the index's releases recorded; base.jsonl and
    new.jsonl as 5.17.0 and 5.18.0 would sweep."""
    use_fake_noxfile(tmp_path, monkeypatch)
    monkeypatch.setattr(releases, "index_releases", lambda: RECORDED_RELEASES)
    runs(tmp_path, base=["build", "build"], new=["build", "error"])
    return tmp_path


def runs(directory: Path, base: list[str], new: list[str], new_version: str = "5.18.0") -> None:
    for side, statuses, version in (("base", base, "5.17.0"), ("new", new, new_version)):
        rows = [result(model, status, signature="" if status == "build" else "RuntimeError: boom")
                for model, status in zip(("bert", "gpt2"), statuses, strict=True)]
        run_dir = write_run(directory / f"{side}-run", rows, transformers=version)
        (run_dir / "results.jsonl").replace(directory / f"{side}.jsonl")


def log(directory: Path) -> list[list[str]]:
    return [line.split()[:3] for line in (directory / "log.txt").read_text().splitlines()]


def test_a_regression_exits_1_with_the_diff_and_both_reports(fake, capsys):
    code = main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "--models", "bert,gpt2", "-j", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "1 regression" in out and "gpt2" in out
    outdir = fake / "reports" / "upgrade-5.17.0-to-5.18.0"
    for name in ("diff.md", "diff.html", "report.html", "results.csv", "matrix.csv",
                 "base/results.jsonl", "new/results.jsonl"):
        assert (outdir / name).is_file(), name
    assert "gpt2" in (outdir / "diff.md").read_text()
    assert log(fake) == [["install", "base", "transformers==5.17.0"], ["install", "new", "transformers==5.18.0"],
                         ["sweep", "base", "transformers==5.17.0"], ["sweep", "new", "transformers==5.18.0"]]
    sweep_line = (fake / "log.txt").read_text().splitlines()[3]
    assert "--label new: transformers 5.18.0 --overwrite" in sweep_line
    assert "--models bert,gpt2 --checks" in sweep_line and sweep_line.endswith("--jobs 1 --allow-absent")


def test_an_allowed_regression_exits_0(fake, capsys):
    (fake / "allow.txt").write_text("gpt2/build  # known\n")
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "-o", "out", "--allow", "allow.txt"]) == 0
    assert "1 regression (1 allowed)" in capsys.readouterr().out
    assert (fake / "out" / "diff.html").is_file()


def test_no_change_exits_0(fake, capsys):
    runs(fake, base=["build", "error"], new=["build", "error"])
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "-o", "out"]) == 0
    assert "0 regressions" in capsys.readouterr().out


def test_a_release_pip_cannot_install_stops_before_any_sweep(fake, capsys, monkeypatch):
    # The stand-in noxfile fails to install 9.9.9: a release the index lists that pip cannot install.
    monkeypatch.setattr(releases, "index_releases", lambda: (*RECORDED_RELEASES, "9.9.9"))
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "9.9.9"]) == 2
    assert "could not install new (9.9.9): nox exited 1" in capsys.readouterr().err
    assert [action for action, _, _ in log(fake)] == ["install", "install"]


def test_a_release_the_index_does_not_have_is_refused_before_any_install(fake, capsys):
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "9.9.9"]) == 2
    assert ("auditor: error: --to 9.9.9: transformers 9.9.9 is not a release on the package index; "
            "nearest: 5.24.0") in capsys.readouterr().err
    assert not (fake / "log.txt").exists()


def test_results_of_another_release_are_refused(fake, capsys):
    runs(fake, base=["build", "build"], new=["build", "build"], new_version="5.16.0")
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0"]) == 2
    assert "the new side ran transformers 5.16.0, not 5.18.0" in capsys.readouterr().err


def test_existing_results_need_resume_or_overwrite(fake, capsys):
    args = ["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "-o", "out"]
    assert main(args) == 1
    assert main(args) == 2
    assert "pass --resume to continue it or --overwrite" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 1
    assert "--resume" in (fake / "log.txt").read_text().splitlines()[-1]


def test_dry_run_prints_the_commands_and_writes_nothing(fake, capsys):
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6  # what each side installs, then the four nox commands
    assert lines[0].startswith("# base: installs ") and lines[0].endswith(" transformers==5.17.0 (with pip)")
    assert f"-e {checkout_root()}" in lines[0]  # a checkout: this auditor, editable
    assert " AUDITOR_TRANSFORMERS=transformers==5.17.0 " in lines[1]
    assert lines[1].endswith("--session 'upgrade_check(base)' --install-only")
    assert not (fake / "log.txt").exists() and not (fake / "reports").exists()


def test_with_the_weights_check_the_new_side_loads_what_the_base_side_saved(fake, capsys):
    folder = fake / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "--checks", "build,weights",
                 "--checkpoint", "ckpt", "--dry-run"]) == 0
    base, new = capsys.readouterr().out.splitlines()[-2:]
    saved = fake / "reports" / "upgrade-5.17.0-to-5.18.0" / "weights"
    assert base.endswith(f"--checkpoint {folder} --weights-save {saved}")
    assert new.endswith(f"--checkpoint {folder} --weights-from {saved}")


@pytest.mark.parametrize(("args", "message"), [
    (["--from", "5.17.0", "--to", "5.18.0", "--checkpoint", "nowhere"], "nowhere: no such folder"),
    (["--from", "5.x", "--to", "5.18.0"], "'5.x' is neither a transformers version"),
    (["--from", "5.17.0", "--to", "./missing.whl"], "'./missing.whl' is neither"),
    (["--from", "5.18.0", "--to", "5.18"], "nothing to compare"),
    (["--from", "5.17.0", "--to", "5.18.0", "--resume", "--overwrite"], "contradict"),
    (["--from", "5.17.0", "--to", "5.18.0", "--jobs", "0"], "--jobs must be at least 1"),
    (["--from", "5.17.0", "--to", "5.18.0", "--timeout", "0"], "--timeout must be a positive"),
    (["--from", "5.17.0", "--to", "5.18.0", "--checks", "build,nope"], "unknown check(s) nope"),
    (["--from", "5.17.0", "--to", "5.18.0", "--allow", "missing.txt"], "cannot read allow list"),
])
def test_bad_input_exits_2_before_any_work(fake, capsys, args, message):
    assert main(["upgrade-check", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (fake / "log.txt").exists()


def test_a_bad_allow_list_exits_2(fake, capsys):
    (fake / "allow.txt").write_text("/gpt2\n")
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0", "--allow", "allow.txt"]) == 2
    assert "allow.txt:1" in capsys.readouterr().err


def test_without_the_projects_noxfile(fake, monkeypatch, capsys):
    monkeypatch.setattr(runner, "NOXFILE", fake / "nowhere" / "noxfile.py")
    assert main(["upgrade-check", "--from", "5.17.0", "--to", "5.18.0"]) == 2
    assert "needs the sides' nox sessions" in capsys.readouterr().err
