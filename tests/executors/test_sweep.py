"""`auditor sweep` end to end: real worker processes, real transformers, misbehaving plugins."""

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from auditor.core.results import FORMAT_VERSION
from tests.conftest import ROOT, TROUBLEMAKERS, auditor_env, by_type, read_rows, run_auditor, run_auditors

REAL = "bert,gpt2,llama,t5,whisper,llava"


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed")
    # build,decorate: the pickle check's receiver and Ray cluster (~1.3 GB) would count against
    # the 1 GB that makes auditor_hog an `oom`.
    proc = run_auditor("sweep", "--plugin", TROUBLEMAKERS, "--models", f"{REAL},auditor_.*", "--checks", "build,decorate",
                       "--timeout", "10", "--max-memory", "1G", "--jobs", "2", "--reruns", "0", "-o", str(out))
    return proc, out


def test_every_selected_type_ends_with_exactly_one_row(mixed_run):
    proc, out = mixed_run
    assert proc.returncode == 0, proc.stderr
    header, rows = read_rows(out)
    assert header["kind"] == "header" and header["format_version"] == FORMAT_VERSION == 2
    names = [row["model_type"] for row in rows if row["check"] == "build"]
    expected = set(REAL.split(",")) | {
        "auditor_fine", "auditor_hang", "auditor_exit", "auditor_segfault", "auditor_missing",
        "auditor_hub", "auditor_hog", "auditor_child_hog", "auditor_bad_config",
    }
    assert sorted(names) == sorted(expected)


def test_statuses_of_real_and_misbehaving_types(mixed_run):
    _, out = mixed_run
    rows = by_type(read_rows(out)[1])
    for name in REAL.split(","):
        assert rows[name]["status"] == "build", rows[name]
    assert rows["llava"]["extras"]["model_class"] == "LlavaModel"
    assert rows["auditor_fine"]["status"] == "build"
    assert rows["auditor_hang"]["status"] == "timeout"
    assert rows["auditor_exit"]["status"] == "crash"
    assert "exited with code 3" in rows["auditor_exit"]["message"]
    assert rows["auditor_segfault"]["status"] == "crash"
    assert "SIGSEGV" in rows["auditor_segfault"]["message"]
    assert rows["auditor_missing"]["status"] == "missing-dependency"
    assert rows["auditor_hub"]["status"] == "needs-hub"
    assert rows["auditor_hog"]["status"] == "oom"
    assert rows["auditor_child_hog"]["status"] == "oom"  # a worker's children count with it
    assert rows["auditor_bad_config"]["status"] == "config-error"


def test_the_end_names_what_a_missing_package_left_unaudited(mixed_run):
    """One line at the end of the sweep: the types a package this environment lacks left
    missing-dependency, and the commands that install it and sweep them again."""
    proc, _ = mixed_run
    line = next(line for line in proc.stderr.splitlines() if line.startswith("Not audited for want of a package"))
    assert "1 model type (auditor_test_package_that_is_not_installed (auditor_missing))" in line
    assert "`auditor sweep --models auditor_missing` audits them" in line


def test_build_rows_carry_size_and_escape_facts(mixed_run):
    _, out = mixed_run
    bert = by_type(read_rows(out)[1])["bert"]["extras"]
    assert bert["model_class"] == "BertModel"
    assert 100_000_000 < bert["parameters"] < 120_000_000
    assert bert["parameter_bytes"] >= 4 * bert["parameters"]
    assert bert["escaped"] == 0


def test_header_records_the_environment(mixed_run):
    _, out = mixed_run
    run = read_rows(out)[0]["run"]
    import torch
    import transformers

    assert run["torch"] == torch.__version__ and run["transformers"] == transformers.__version__
    assert run["python"] == ".".join(map(str, sys.version_info[:3]))
    assert run["command"].startswith("auditor sweep") and run["started"]


def test_csv_tables_are_written(mixed_run):
    import pandas as pd

    _, out = mixed_run
    long = pd.read_csv(out / "results.csv")
    matrix = pd.read_csv(out / "matrix.csv")
    assert len(long) == len(read_rows(out)[1]) and list(matrix.columns[:2]) == ["model_type", "build"]
    assert len(matrix) == 15
    assert dict(zip(matrix.model_type, matrix.build, strict=False))["auditor_hang"] == "timeout"


def test_worker_output_goes_to_the_log_not_the_terminal(mixed_run):
    proc, out = mixed_run
    log = (out / "workers.log").read_text()
    # The segfaulting type leaves its Python traceback behind, which the crash row points to.
    assert "Fatal Python error: Segmentation fault" in log and "troublemakers.py" in log
    assert log.count("--- worker w") >= 3  # two workers, and the ones that replaced the dead
    assert "Fatal Python error" not in proc.stderr
    assert f"{out / 'workers.log'}" in proc.stderr


def test_identical_failures_share_a_signature(mixed_run):
    _, out = mixed_run
    rows = by_type(read_rows(out)[1])
    assert rows["auditor_exit"]["signature"] == "Crash: worker process exited with code N"


# -- bad input: a clear message and exit code 2, before any work ----------------------------


BAD_INPUT = [
    (["sweep", "--no-such-option"], "unrecognized arguments"),
    (["sweep", "--models", "lama"], "closest known types: llama"),
    (["sweep", "--plugin", "tests/plugins/broken.py"], "broken on purpose"),
    (["sweep", "--checks", "nonsense"], "unknown check"),
    (["sweep", "--jobs", "0"], "--jobs"),
    (["sweep", "--max-memory", "lots"], "--max-memory"),
]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """The refused commands of this module, all at once (each only starts and refuses), by name:
    each bad input's arguments joined by spaces, "unwritable", "existing" and "format"; each with
    its output directory."""
    root = tmp_path_factory.mktemp("refusals")
    runs = {" ".join(args): (args, root / f"bad{index}" / "out") for index, (args, _) in enumerate(BAD_INPUT)}
    blocker = root / "file"
    blocker.write_text("not a directory")
    runs["unwritable"] = (["sweep", "--models", "bert"], blocker / "out")
    runs["existing"] = (["sweep", "--models", "bert"], root / "existing")
    runs["existing"][1].mkdir()
    (runs["existing"][1] / "results.jsonl").write_text("{}\n")
    runs["format"] = (["sweep", "--models", "bert", "--resume"], root / "format")
    runs["format"][1].mkdir()
    header = {"kind": "header", "format_version": 99, "run": {}}
    (runs["format"][1] / "results.jsonl").write_text(json.dumps(header) + "\n")
    procs = run_auditors([[*args, "-o", str(out)] for args, out in runs.values()], cwd=ROOT)
    return {name: (proc, out) for (name, (_, out)), proc in zip(runs.items(), procs, strict=True)}


@pytest.mark.parametrize(("args", "expected"), BAD_INPUT)
def test_bad_input_exits_2_with_a_message(refusals, args, expected):
    proc, out = refusals[" ".join(args)]
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert not (out / "results.jsonl").exists()


def test_unwritable_output_directory_exits_2(refusals):
    proc, _ = refusals["unwritable"]
    assert proc.returncode == 2 and "cannot write to output directory" in proc.stderr


def test_existing_results_need_resume_or_overwrite(refusals):
    proc, _ = refusals["existing"]
    assert proc.returncode == 2 and "--resume" in proc.stderr


def test_resume_rejects_another_format_version(refusals):
    proc, _ = refusals["format"]
    assert proc.returncode == 2 and "format version 99" in proc.stderr


# -- resume, interruption, isolation ---------------------------------------------------------


def test_resume_runs_only_what_is_missing(tmp_path):
    # build,decorate: resuming is the same for every check, and these need no Ray cluster.
    checks = ("--checks", "build,decorate")
    first = run_auditor("sweep", "--models", "bert,gpt2", *checks, "--jobs", "1", "-o", str(tmp_path))
    assert first.returncode == 0, first.stderr
    again = run_auditor("sweep", "--models", "bert,gpt2,t5", *checks, "--jobs", "1", "--resume", "-o", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert "2 model types already done" in again.stderr
    text = (tmp_path / "results.jsonl").read_text()
    assert text.count('"kind": "header"') == 1
    assert sorted(row["model_type"] for row in read_rows(tmp_path)[1] if row["check"] == "build") == ["bert", "gpt2", "t5"]


def test_ctrl_c_keeps_finished_rows_and_says_how_to_resume(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor", "sweep", "--plugin", TROUBLEMAKERS, "--jobs", "1", "--reruns", "0",
         "--models", "auditor_fine,auditor_hang", "-o", str(tmp_path)],
        env=auditor_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    results = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 2):
        time.sleep(0.2)
    workers = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Interrupted" in stderr and "--resume" in stderr
    assert {row["model_type"] for row in read_rows(tmp_path)[1]} == {"auditor_fine"}
    time.sleep(0.5)
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]


# One of each family that leaves something behind in a worker: multimodal, decoder, encoder-decoder,
# encoder, MoE, a plugin's registration.
ISOLATION_TYPES = ["llava", "gpt2", "t5", "bert", "mixtral", "auditor_fine"]


def _comparable(out):
    return {(r["model_type"], r["check"], r["component"], r["policy"]): (r["status"], r["signature"], r["extras"])
            for r in read_rows(out)[1]}


def test_rows_do_not_depend_on_what_ran_before_in_the_worker(tmp_path):
    # The two sweeps run at the same time: every type after another in one worker, and every type
    # in a fresh worker of its own. The second starts six workers, so it gets two at a time
    # (which types meet in a worker is what matters, not how many workers there are).
    common = ["sweep", "--plugin", TROUBLEMAKERS, "--models", ",".join(ISOLATION_TYPES)]
    together, alone = run_auditors([[*common, "--jobs", "1", "-o", str(tmp_path / "together")],
                                    [*common, "--jobs", "2", "--max-tasks-per-worker", "1",
                                     "-o", str(tmp_path / "alone")]])
    assert together.returncode == 0 and alone.returncode == 0, together.stderr + alone.stderr
    assert _comparable(tmp_path / "together") == _comparable(tmp_path / "alone")


def test_killed_workers_and_killed_sweeps_leave_no_scratch_behind(tmp_path):
    import tempfile

    # A temporary directory of the sweep's own (TMPDIR): another auditor on the machine, which
    # removes orphans in the shared one too, can neither take this test's orphan nor add its own.
    # Short, under /tmp: Ray's sockets live below it, in at most 107 bytes a path.
    scratch_root = Path(tempfile.mkdtemp(prefix="a", dir="/tmp"))
    try:
        _sweep_that_loses_a_worker_leaves_no_scratch(scratch_root, tmp_path)
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)


def _sweep_that_loses_a_worker_leaves_no_scratch(scratch_root: Path, tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = scratch_root / f"auditor-{int(dead.stdout)}-left-by-a-killed-sweep"
    (orphan / "twins").mkdir(parents=True)
    before = {path.name for path in scratch_root.glob("auditor-*")}

    # The pickle check gives each worker scratch (its receiver's modules cache, its twins); the
    # segfault takes the worker down before it can clean up, so the pool does.
    proc = run_auditor("sweep", "--plugin", TROUBLEMAKERS, "--reruns", "0", "--models", "auditor_segfault,auditor_fine",
                       "--checks", "build,pickle", "--jobs", "1", "-o", str(tmp_path),
                       env={"TMPDIR": str(scratch_root)})

    assert proc.returncode == 0, proc.stderr
    assert by_type(read_rows(tmp_path)[1])["auditor_segfault"]["status"] == "crash"
    assert not orphan.exists() and re.search(r"Removed \d+ scratch director(y|ies) left in", proc.stderr)
    left = {path.name for path in scratch_root.glob("auditor-*")} - before
    assert left == set()
