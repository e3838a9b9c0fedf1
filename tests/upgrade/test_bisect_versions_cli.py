"""`auditor bisect`, `bisect-step` and `versions` end to end with their nox steps stood in for
(tests/upgrade/fake_releases.py) and the index's release list recorded; commits through a real
`git bisect run` over a small real repository; and bad input, refused before any install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.environments import releases
from auditor.environments.releases import parse_index_versions
from auditor.environments.selfdist import venv_home
from auditor.upgrade import bisect_run
from tests.upgrade import fake_releases

RELEASES = tuple(parse_index_versions(
    (Path(__file__).resolve().parents[1] / "fixtures" / "upgrade" / "pip-index-versions.txt").read_text()))
SPAN = ["5.13.0", "5.13.1", "5.14.0", "5.14.1", "5.15.0", "5.15.1", "5.16.0", "5.16.1", "5.17.0", "5.18.0"]
COLUMN = "decorate/decoder/legacy"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Steps and index stood in for; returns a function that sets the truth table and reads the log."""
    fake_releases.patch(monkeypatch.setattr)
    monkeypatch.setattr(releases, "index_releases", lambda: RELEASES)
    monkeypatch.setattr("auditor.checks.available", lambda: ["build", "decorate", "pickle", "backend"])  # no torch import
    monkeypatch.chdir(tmp_path)
    conf = tmp_path / "fake.json"
    monkeypatch.setenv(fake_releases.ENV, str(conf))

    def setup(truth, fail=()):
        conf.write_text(json.dumps({"log": str(tmp_path / "log.txt"), "truth": truth, "fail": list(fail)}))

    def log():
        path = tmp_path / "log.txt"
        return [line.split() for line in path.read_text().splitlines()] if path.exists() else []

    setup.log = log
    return setup


def added_in(release, status="build"):
    """granite_swa as the index's releases have it: absent before `release`."""
    return {r: ({"granite_swa": {COLUMN: status, "build": "build"}} if SPAN.index(r) >= SPAN.index(release) else {})
            | {"llama": {COLUMN: "build", "build": "build"}} for r in SPAN}


def test_bisect_names_the_release_that_added_a_type(fake, capsys):
    fake(added_in("5.15.0"))
    assert main(["bisect", "granite_swa", COLUMN, "--good", "5.13.0", "--bad", "5.18.0"]) == 0
    out = capsys.readouterr().out
    assert "granite_swa decorate/decoder/legacy: first changed in transformers 5.15.0" in out
    assert "  5.14.1: absent (no such model type)" in out
    assert "  5.15.0: decorate/decoder/legacy: build (granite_swa build)" in out
    installs = [v for action, v in fake.log() if action == "install"]
    assert installs[:2] == ["5.13.0", "5.18.0"] and len(installs) <= 6
    assert f"{len(installs)} releases installed (the 2 ends and {len(installs) - 2} bisection steps) " \
           "of the 9 after 5.13.0 up to 5.18.0" in out


def test_bisect_of_any_cell_shows_the_columns_that_changed(fake, capsys):
    truth = {r: {"llama": {COLUMN: "build" if r < "5.16.1" else "refused", "build": "build"}} for r in SPAN}
    fake(truth)
    assert main(["bisect", "llama", "--good", "5.13.0", "--bad", "5.18.0"]) == 0
    out = capsys.readouterr().out
    assert "llama (any cell): first changed in transformers 5.16.1" in out
    assert "  5.16.0: decorate/decoder/legacy: build (llama build)\n" in out


def test_a_release_that_fails_to_install_is_skipped(fake, capsys):
    fake(added_in("5.15.0"), fail=["5.15.0"])
    assert main(["bisect", "granite_swa", COLUMN, "--good", "5.13.0", "--bad", "5.18.0"]) == 0
    out = capsys.readouterr().out
    assert "changed in one of transformers 5.15.0, 5.15.1" in out and "could not be measured: 5.15.0" in out


@pytest.mark.parametrize(("args", "message"), [
    (["granite_swa", COLUMN, "--good", "5.13.0", "--bad", "5.99.0"], "5.99.0 is not a release on the package index"),
    (["granite_swa", COLUMN, "--good", "5.18.0", "--bad", "5.13.0"], "must be an older release"),
    (["granite_swa", "nope/decoder/legacy", "--good", "5.13.0", "--bad", "5.18.0"], "unknown check(s) nope"),
    (["granite_swa", COLUMN, "--good", "5.13.0", "--bad", "5.18.0", "--checks", "build"], "COLUMN already names"),
    (["granite_swa", COLUMN, "--good", "5.13.0", "--bad", "5.18.0", "--jobs", "0"], "--jobs must be at least 1"),
])
def test_bad_input_exits_2_before_any_install(fake, capsys, args, message):
    fake(added_in("5.15.0"))
    assert main(["bisect", *args]) == 2
    assert message in capsys.readouterr().err
    assert fake.log() == []


def test_a_cell_the_same_at_both_ends_exits_2_before_any_release_between(fake, capsys):
    fake(added_in("5.15.0"))
    assert main(["bisect", "llama", COLUMN, "--good", "5.13.0", "--bad", "5.18.0"]) == 2
    assert "llama decorate/decoder/legacy does not differ between 5.13.0 and 5.18.0" in capsys.readouterr().err
    assert [v for _, v in fake.log()] == ["5.13.0", "5.13.0", "5.18.0", "5.18.0"]


def git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository of eight commits, c0..c7, each with its name in version.txt."""
    repo = tmp_path / "transformers"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "pyproject.toml").write_text("[project]\nname = 'transformers'\n")
    for i in range(8):
        (repo / "version.txt").write_text(f"c{i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"change {i}")
    monkeypatch.setattr(bisect_run, "STEP_COMMAND", (sys.executable, fake_releases.__file__))
    return repo


def test_commits_bisect_through_git_bisect_run(fake, repo, capsys):
    fake({f"c{i}": {"llama": {COLUMN: "build" if i < 5 else "refused"}} for i in range(8)})
    assert main(["bisect", "llama", COLUMN, "--repo", str(repo), "--good", "main~4", "--bad", "main"]) == 0
    out = capsys.readouterr().out
    c5 = git(repo, "rev-parse", "main~2").strip()
    assert f"llama decorate/decoder/legacy: first bad commit {c5} change 5" in out
    assert "checkouts installed (the 2 ends and" in out and "of the 4 commits after main~4" in out
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"  # left where it was
    assert not (repo / ".git" / "BISECT_START").exists()


def test_a_step_exits_by_the_cells_status(fake, repo):
    fake({"c7": {"llama": {COLUMN: "refused"}}, "c6": {"llama": {COLUMN: "build"}}})
    step = ["bisect-step", "llama", COLUMN, "--repo", str(repo), "--good-status", "build"]
    assert main(step) == 1
    git(repo, "checkout", "-q", "main~1")
    assert main(step) == 0
    git(repo, "checkout", "-q", "main~2")  # c5: no rows at all, as a build that left llama out
    assert main([*step[:-1], "absent"]) == 0
    fake({}, fail=["c5"])
    assert main(step) == 125


@pytest.mark.parametrize("trouble", ["dirty", "ref", "same", "not-git"])
def test_bad_commit_input_exits_2_before_any_install(fake, repo, capsys, trouble):
    fake({f"c{i}": {"llama": {COLUMN: "build"}} for i in range(8)})
    args = ["bisect", "llama", COLUMN, "--repo", str(repo), "--good", "main~7", "--bad", "main"]
    if trouble == "dirty":
        (repo / "version.txt").write_text("edited\n")
    elif trouble == "ref":
        args[-1] = "no-such-branch"
    elif trouble == "not-git":
        args[4] = str(repo.parent)
    assert main(args) == 2
    err = capsys.readouterr().err
    expected = {"dirty": "has uncommitted changes", "ref": "'no-such-branch' is not a commit",
                "same": "does not differ between main~7 and main", "not-git": "is not a git checkout"}[trouble]
    assert expected in err
    assert len(fake.log()) == (4 if trouble == "same" else 0)
    assert not (repo / ".git" / "BISECT_START").exists()


def test_a_steps_bad_input_stops_git_bisect_run(fake, repo, capsys):
    assert main(["bisect-step", "llama", "--repo", str(repo), "--good-status", "build"]) == 128
    assert "--good-status needs COLUMN" in capsys.readouterr().err


VERSIONS = {"5.20.0": {"llama": {"build": "build"}, "bert": {"build": "error"}},
            "5.22.0": {"llama": {"build": "error"}, "bert": {"build": "error"}, "gte": {"build": "build"}},
            "5.24.0": {"llama": {"build": "build"}, "bert": {"build": "build"}, "gte": {"build": "build"}}}


def test_versions_writes_one_matrix_and_the_min_max_table(fake, tmp_path, capsys):
    fake(VERSIONS)
    assert main(["versions", "5.24.0,5.20.0,5.22.0", "--checks", "build", "-o", "out"]) == 0
    assert [a for a, _ in fake.log()] == ["install"] * 3 + ["sweep"] * 3
    out = tmp_path / "out"
    for name in ("report.html", "matrix.csv", "minmax.csv", "minmax.html", "5.20.0/results.jsonl"):
        assert (out / name).is_file(), name
    header = (out / "matrix.csv").read_text().splitlines()[0]
    assert header.index("transformers 5.20.0") < header.index("transformers 5.22.0") < header.index("transformers 5.24.0")
    minmax = (out / "minmax.csv").read_text()
    assert "llama,build,5.20.0,5.24.0,5.22.0:error,,5.20.0 5.22.0 5.24.0" in minmax
    assert "gte,build,5.22.0,5.24.0,,5.20.0," in minmax
    assert "3 releases (5.20.0, 5.22.0, 5.24.0), 3 cells; 0 pass in none of them, 1 fail between" in capsys.readouterr().out
    assert main(["versions", "5.20.0,5.22.0,5.24.0", "--checks", "build", "-o", "out"]) == 2  # results exist


def test_versions_resolves_a_specifier_and_shards_merge(fake, tmp_path, capsys):
    fake(VERSIONS)
    assert main(["versions", ">=5.20,<5.25", "--dry-run"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("# ")]
    assert len(lines) == 2 * 10 and "AUDITOR_TRANSFORMERS=transformers==5.20.1" in lines[1]
    assert f"--envdir {venv_home()}/releases/5.20.0 " in lines[0]
    for i in (1, 2):
        assert main(["versions", "5.20.0,5.24.0", "--shard", f"{i}/2", "-o", "out", "--executor", "ray"]) == 0
    assert (tmp_path / "out" / "5.20.0" / "shard-2-of-2" / "results.jsonl").is_file()
    capsys.readouterr()
    assert main(["versions", "--merge", "-o", "out"]) == 0
    assert "2 releases (5.20.0, 5.24.0), 3 cells" in capsys.readouterr().out
    assert main(["versions", "5.20.0", "--shard", "2/2", "--executor", "ray", "--dry-run"]) == 0
    what, install, sweep = capsys.readouterr().out.splitlines()
    assert what.startswith("# 5.20.0: installs ") and "[ray]" in what  # the auditor with its ray extra
    assert sweep.endswith("--executor ray --shard 2/2")
    assert " AUDITOR_TRANSFORMERS=transformers==5.20.0 'AUDITOR_EXTRAS=[ray]' " in install


@pytest.mark.parametrize(("args", "message"), [
    (["5.20.0,5.20.9"], "5.20.9 is not a release on the package index"),
    ([">=9"], "no transformers release on the package index matches"),
    (["5.20.0", "--shard", "3/2"], "--shard '3/2' is not I/N"),
    (["5.20.0", "--checks", "nope"], "unknown check(s) nope"),
    (["5.20.0", "--resume", "--overwrite"], "contradict"),
    (["5.20.0", "--ray-address", "h:1"], "--ray-address needs --executor ray"),
    ([], "name the releases"),
    (["--merge", "-o", "nowhere"], "no runs under"),
])
def test_versions_bad_input_exits_2_before_any_install(fake, capsys, args, message):
    fake(VERSIONS)
    assert main(["versions", *args]) == 2
    assert message in capsys.readouterr().err
    assert fake.log() == []


def test_bisect_of_a_weights_cell_compares_each_release_with_the_good_ends_checkpoint(fake, capsys, monkeypatch):
    """The good end's sweep saves the weights check's checkpoints; every later release loads those
    (--weights-from), so a step's outputs are compared with the good release's, not its own."""
    from auditor.environments import runner

    fake({r: {"olmo3": {"weights": "same" if SPAN.index(r) < 4 else "different-outputs", "build": "build"}}
          for r in SPAN})
    monkeypatch.setattr("auditor.checks.available", lambda: ["build", "decorate", "pickle", "backend", "weights"])
    sweeps, stand_in = [], runner.run_step

    def spy(step, events):
        if step.action == "sweep":
            sweeps.append((step.env["AUDITOR_TRANSFORMERS"], step.argv))
        return stand_in(step, events)

    monkeypatch.setattr(runner, "run_step", spy)
    assert main(["bisect", "olmo3", "weights", "--good", "5.13.0", "--bad", "5.18.0"]) == 0
    assert "olmo3 weights: first changed in transformers 5.15.0" in capsys.readouterr().out
    assert sweeps[0][0] == "transformers==5.13.0" and "--weights-save" in sweeps[0][1]
    folder = sweeps[0][1][sweeps[0][1].index("--weights-save") + 1]
    assert len(sweeps) > 2 and all(argv[argv.index("--weights-from") + 1] == folder and "--weights-save" not in argv
                                   for _, argv in sweeps[1:])
