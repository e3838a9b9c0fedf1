"""Bad input a new user gives, through the real command in a process of its own (issue 43): a
run id that is not one safe name, an empty or empty-handed selection, a transformers release the
package index does not have, each refused with exit 2 and a clear message before any work; and a
results file whose tail was overwritten, reported up to the damage with a warning naming the line."""

from __future__ import annotations

import csv

import pytest

from tests.conftest import ROOT, run_auditor

SAMPLE = ROOT / "tests" / "fixtures" / "sample-small.jsonl"  # format 1: one build row per type, 9 types


# -- a results file whose tail was overwritten -------------------------------------------------


def test_report_of_a_tail_overwritten_with_garbage_renders_the_types_before_it_and_warns(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    before = [line.split(b'"model_type": "')[1].split(b'"')[0].decode() for line in lines[1:6]]
    # Lines 7 on (llama, t5, llava, whisper) overwritten: bytes that are no JSON, over several lines.
    (run_dir / "results.jsonl").write_bytes(b"".join(lines[:6]) + b"\x00\x17{garbage\n\xff\xfe more\nzzz\n")
    proc = run_auditor("report", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert (f"auditor: warning: {run_dir / 'results.jsonl'}: line 7 stopped the reading (cut short or not JSON"
            in proc.stderr)
    assert "read without lines 7-9, with the 5 model types finished before it" in proc.stderr
    with (run_dir / "matrix.csv").open(newline="") as table:
        assert [row["model_type"] for row in csv.DictReader(table)] == sorted(before)
    assert (run_dir / "report.html").is_file()


# -- a run id is one name ------------------------------------------------------------------------


@pytest.mark.parametrize(("run_id", "shown"), [
    ("../escaped", "--run-id '../escaped' is not a run id"),
    ("/some/absolute/dir", "--run-id '/some/absolute/dir' is not a run id"),
    ("release/5.25", "--run-id 'release/5.25' is not a run id"),
    (".hidden", "--run-id '.hidden' is not a run id"),
    ("", "--run-id is empty"),
])
def test_a_run_id_that_is_not_one_safe_name_exits_2_before_any_work(tmp_path, run_id, shown):
    reports = tmp_path / "deep" / "reports"
    proc = run_auditor("sweep", "--reports", str(reports), "--run-id", run_id, "--models", "llama",
                       "--checks", "build", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"auditor: error: {shown}: a run id is one name of ASCII letters, digits, "
                                  "'.', '_', '-' and '+', not starting with '.'")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == []  # nothing made, inside or out


def test_a_run_id_offers_a_name_that_is_one():
    proc = run_auditor("sweep", "--run-id", "release/5.25", "--checks", "build")
    assert proc.returncode == 2 and "such as 'release-5.25'" in proc.stderr


# -- an empty selection ------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("--models", ""), ("--exclude", ""), ("--models", ","),
                                  ("--models", "llama", "--models", "")])
def test_an_empty_models_or_exclude_value_exits_2_before_any_work(tmp_path, args):
    proc = run_auditor("sweep", "-o", str(tmp_path / "run"), "--checks", "build", *args)
    assert proc.returncode == 2, proc.stderr
    flag = args[-2]
    assert f"auditor: error: {flag} {args[-1]!r} names nothing: give at least one name, or leave {flag} out" \
        in proc.stderr
    assert not (tmp_path / "run").exists()


def test_a_selection_that_matches_nothing_exits_2_before_any_model_type_runs(tmp_path):
    proc = run_auditor("sweep", "-o", str(tmp_path / "run"), "--checks", "build", "-j", "1",
                       "--models", "llama", "--exclude", "llama")
    assert proc.returncode == 2, proc.stderr
    assert "auditor: error: the selection is empty: --models llama --exclude llama leaves none of the" in proc.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.parametrize("command", [("upgrade-check", "--from", "5.24.0", "--to", "5.25.0"),
                                     ("versions", "5.24.0,5.25.0")])
def test_the_commands_that_pass_a_selection_on_refuse_an_empty_one_before_any_install(tmp_path, command):
    proc = run_auditor(*command, "--models", "", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "auditor: error: --models '' names nothing" in proc.stderr
    assert list(tmp_path.iterdir()) == []


# -- a release the package index does not have ---------------------------------------------------


@pytest.fixture(scope="module")
def index_answers():
    """The package index pip is configured with, asked as the commands ask it (one `pip index
    versions`); the tests below need it to answer, as upgrade-check's real install would."""
    from auditor.environments import releases

    try:
        return releases.index_releases()
    except releases.ReleaseError as exc:
        pytest.skip(f"the package index cannot be read here: {exc}")


@pytest.mark.parametrize(("command", "shown"), [
    (("upgrade-check", "--from", "9.9.9", "--to", "5.25.0"), "--from 9.9.9: transformers 9.9.9"),
    (("bisect", "llama", "build", "--good", "9.9.9", "--bad", "5.25.0"), "transformers 9.9.9"),
    (("versions", "5.25.0,9.9.9"), "transformers 9.9.9"),
])
def test_a_release_the_index_does_not_have_exits_2_before_any_install(tmp_path, index_answers, command, shown):
    proc = run_auditor(*command, "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    # The one line, nox never started (it would log), and no output directory.
    assert proc.stderr == (f"auditor: error: {shown} is not a release on the package index; "
                           f"nearest: {index_answers[-1]}\n")
    assert list(tmp_path.iterdir()) == []
