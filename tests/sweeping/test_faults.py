"""Faults injected for real into the real CLI, and what must hold after each: the results file is
readable, and after `--resume` the run is complete and row for row what an uninterrupted run
gives (timings and worker names aside), with no row lost and none duplicated.

The faults: SIGKILL of the sweep's parent between model types and in the middle of writing one
(the writer's test-only seam AUDITOR_TEST_WRITE_PAUSE, read by ResultsWriter alone, pauses half
way through each model type's unit so the kill lands there), SIGKILL of a worker and of the Ray
cluster's processes mid-type, a results file cut at every byte of its last two lines, a full
disk (RLIMIT_FSIZE on the sweep), workers that cannot start, and `--resume` under each option
that changes the experiment. Few, fast model types: the suite takes a few minutes.

With AUDITOR_FAULT_LEDGER=FILE set, the figures (faults injected, runs readable, rows lost and
duplicated) are written there at the end: BENCHMARKS.md's reliability figures come from it.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from auditor.core.results import TORN_SUFFIX, read_run, repair
from auditor.core.writing import PAUSE_ENV
from tests.conftest import TROUBLEMAKERS, auditor_env, run_auditor, run_auditors

MODELS = "bert,gpt2,llama,t5"
COMMON = ("--models", MODELS, "--checks", "build,decorate", "--jobs", "2")
LEDGER: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def ledger():
    yield LEDGER
    target = os.environ.get("AUDITOR_FAULT_LEDGER")
    if target:
        Path(target).write_text(json.dumps(dict(LEDGER), indent=1, sort_keys=True) + "\n")


def _rows(path) -> Counter:
    """The rows of a run as comparable text, `seconds` and `worker` aside (a multiset)."""
    found = Counter()
    for result in read_run(path).results:
        data = result.to_json()
        data.pop("seconds")
        data.pop("worker")
        found[json.dumps(data, sort_keys=True, default=str)] += 1
    return found


def _account(reference: Counter, path, fault: str) -> None:
    """Record and check a run that went through a fault: readable, no row lost, none duplicated."""
    LEDGER[f"faults:{fault}"] += 1
    rows = _rows(path)  # raises if unreadable
    LEDGER["runs readable"] += 1
    lost, extra = reference - rows, rows - reference
    LEDGER["rows lost"] += sum(lost.values())
    LEDGER["rows duplicated or foreign"] += sum(extra.values())
    assert not lost and not extra, (f"lost {sum(lost.values())}: {list(lost)[:2]}; "
                                    f"extra {sum(extra.values())}: {list(extra)[:2]}")


def _sweep(out: Path, *extra: str, env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "auditor", "sweep", *COMMON, "-o", str(out), *extra],
                            env={**auditor_env(), **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **popen)


def _resume(out: Path, *extra: str) -> subprocess.CompletedProcess:
    proc = run_auditor("sweep", *COMMON, "-o", str(out), "--resume", *extra)
    assert proc.returncode == 0, proc.stderr
    return proc


def _wait_for(condition, timeout: float = 180.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _done_records(path: Path) -> int:
    return path.read_bytes().count(b'"kind": "done"') if path.exists() else 0


def _kill_parent(proc: subprocess.Popen) -> list[psutil.Process]:
    """SIGKILL the sweep's parent alone (its workers are in process groups of their own, as when
    the auditor itself crashes) and wait until the processes it left have gone."""
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()
    proc.communicate(timeout=30)
    psutil.wait_procs(children, timeout=60)
    for child in children:  # what did not notice its parent died
        if child.is_running():
            child.kill()
    return children


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, Counter]:
    out = tmp_path_factory.mktemp("reference")
    proc = run_auditor("sweep", *COMMON, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, _rows(out)


# -- the results file cut short --------------------------------------------------------------


def test_a_file_cut_at_every_byte_of_its_last_two_lines_reads_and_repairs(reference, tmp_path):
    out, rows = reference
    data = (out / "results.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    start = len(data) - len(lines[-1]) - len(lines[-2])
    complete = _rows(out)
    for offset in range(start, len(data) + 1):
        path = tmp_path / "results.jsonl"
        path.write_bytes(data[:offset])
        run = read_run(path)  # never raises
        LEDGER["faults:cut at a byte offset"] += 1
        LEDGER["runs readable"] += 1
        found = _rows(path)
        assert not found - complete  # nothing read that the whole file does not have
        assert (run.damage is None) == (offset == len(data))
        # A model type counts only whole: those read have every row of the uninterrupted run.
        for model_type in run.done_model_types:
            assert sum(1 for key in complete if json.loads(key)["model_type"] == model_type) == \
                   sum(1 for key in found if json.loads(key)["model_type"] == model_type)
        damage = repair(path)
        assert (damage is None) == (offset == len(data))
        repaired = path.read_bytes()
        assert repaired.endswith(b"\n") and read_run(path).damage is None and _rows(path) == found
        if damage is not None:
            torn = (tmp_path / f"results.jsonl{TORN_SUFFIX}").read_bytes()
            assert data[len(repaired):offset].strip().splitlines()[-1] in torn  # kept aside, not deleted
        (tmp_path / f"results.jsonl{TORN_SUFFIX}").unlink(missing_ok=True)
    assert rows == complete


CUTS = ["inside the last type's rows", "inside its completion record"]


@pytest.fixture(scope="module")
def cut_resumes(reference, tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """The reference run's file cut at each of CUTS, and resumed: the two resumes at once. By
    where it was cut: the resume and its output directory."""
    out, _ = reference
    data = (out / "results.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    outs = {}
    for where in CUTS:
        cut = len(data) - len(lines[-1]) - (len(lines[-2]) // 2 if where.startswith("inside the last") else 0) - 5
        outs[where] = tmp_path_factory.mktemp("cut")
        (outs[where] / "results.jsonl").write_bytes(data[:cut])
    procs = run_auditors([["sweep", *COMMON, "-o", str(outs[where]), "--resume"] for where in CUTS])
    return {where: (proc, outs[where]) for where, proc in zip(CUTS, procs, strict=True)}


@pytest.mark.parametrize("where", CUTS)
def test_a_cut_file_resumes_to_the_whole_run(reference, cut_resumes, where):
    _, rows = reference
    proc, out = cut_resumes[where]
    assert proc.returncode == 0, proc.stderr
    assert "Repaired" in proc.stderr and "run again" in proc.stderr
    assert (out / f"results.jsonl{TORN_SUFFIX}").exists()
    _account(rows, out, "cut file resumed")


# -- the sweep's parent killed ---------------------------------------------------------------


def test_parent_killed_between_model_types_resumes_to_the_whole_run(reference, tmp_path):
    _, rows = reference
    proc = _sweep(tmp_path)
    _wait_for(lambda: _done_records(tmp_path / "results.jsonl") >= 1, what="the first model type's rows")
    _kill_parent(proc)
    assert read_run(tmp_path).results  # readable, with what was finished
    _resume(tmp_path)
    _account(rows, tmp_path, "parent SIGKILL between types")


def test_parent_killed_while_writing_a_model_type_resumes_to_the_whole_run(reference, tmp_path):
    _, rows = reference
    results = tmp_path / "results.jsonl"
    # The writer pauses half way through each unit (its test-only seam): kill it there.
    proc = _sweep(tmp_path, "--jobs", "1", env={PAUSE_ENV: "30"})

    def half_written() -> bool:
        data = results.read_bytes() if results.exists() else b""
        return data.count(b"\n") >= 1 and not data.endswith(b"\n")

    _wait_for(half_written, what="a half-written unit")
    _kill_parent(proc)
    run = read_run(tmp_path)
    assert run.damage is not None and run.damage.incomplete and not run.results
    _resume(tmp_path)
    _account(rows, tmp_path, "parent SIGKILL mid-write")


# -- a worker, the Ray cluster ---------------------------------------------------------------


def test_a_worker_killed_mid_type_costs_that_type_only(reference, tmp_path):
    _, rows = reference
    proc = _sweep(tmp_path, "--plugin", TROUBLEMAKERS, "--models", "auditor_hang", "--timeout", "120", "--reruns", "0")
    workers = []

    def hang_running() -> bool:
        workers[:] = [p for p in psutil.Process(proc.pid).children() if "spawn_main" in " ".join(p.cmdline())]
        return _done_records(tmp_path / "results.jsonl") >= 4 and bool(workers)

    _wait_for(hang_running, what="the four real types done and auditor_hang running")
    time.sleep(1.0)
    for worker in workers:  # the one running auditor_hang (and the idle one, if it is still there)
        if worker.is_running():
            worker.kill()
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr
    LEDGER["faults:worker SIGKILL mid-type"] += 1
    run = read_run(tmp_path)
    LEDGER["runs readable"] += 1
    hang = [r for r in run.results if r.model_type == "auditor_hang"]
    assert hang and all(r.status.value == "crash" and "SIGKILL" in r.message for r in hang)
    others = Counter({k: v for k, v in _rows(tmp_path).items() if json.loads(k)["model_type"] != "auditor_hang"})
    assert others == rows
    LEDGER["rows lost"] += sum((rows - others).values())


@pytest.mark.slow  # its drivers give up on a dead cluster after 10 s (LOOPBACK_SYSTEM_CONFIG)
def test_the_ray_cluster_killed_mid_sweep_leaves_a_complete_readable_run(tmp_path):
    """Every type still gets all its rows; the Ray cells after the kill say the cluster is gone.
    The type in flight may lose its worker (Ray terminates a driver whose cluster is gone): that
    is the executor's failure, an `auditor-error`, never the model's `crash`."""
    models = "bert,gpt2,t5"
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "sweep", "--models", models, "--checks", "build,pickle",
                             "--jobs", "1", "-o", str(tmp_path)], env=auditor_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: _done_records(tmp_path / "results.jsonl") >= 1, what="the first model type")
    ray = [p for p in psutil.Process(proc.pid).children(recursive=True)
           if any(name in " ".join(p.cmdline()) for name in ("raylet", "gcs_server"))]
    assert ray, "no Ray processes found to kill"
    for process in ray:
        process.kill()
    _, stderr = proc.communicate(timeout=600)
    LEDGER["faults:Ray cluster SIGKILL mid-sweep"] += 1
    assert proc.returncode == 0, stderr
    run = read_run(tmp_path)
    LEDGER["runs readable"] += 1
    assert run.damage is None
    assert run.done_model_types == set(models.split(","))
    build = {r.model_type: r.status.value for r in run.results if r.check == "build"}
    assert build == {"bert": "build", "gpt2": "build", "t5": "build"}  # the other checks went on
    ray_cells = {r.model_type: r for r in run.results if r.component == "ray-by-value-remote"}
    assert ray_cells["bert"].status.value == "build"  # finished before the kill
    assert ray_cells["t5"].status.value == "error" and "cluster is gone" in ray_cells["t5"].message
    assert not [r for r in run.results if r.status.value == "crash"]
    lost = [r for r in run.results if r.status.value == "auditor-error"]
    assert all(r.message.startswith("ExecutorError: worker process") and "Ray cluster is gone" in r.message
               for r in lost), lost


# -- the disk, the engine ---------------------------------------------------------------------


def test_a_full_disk_stops_the_sweep_clearly_and_the_file_resumes(reference, tmp_path):
    _, rows = reference
    header = (reference[0] / "results.jsonl").read_bytes().split(b"\n", 1)[0]
    limit = len(header) + 2000  # the header and part of the first model type's unit

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = _sweep(tmp_path, preexec_fn=small_disk)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 3, stderr
    assert "cannot write" in stderr and "Resume with:" in stderr
    run = read_run(tmp_path)  # readable
    assert run.damage is not None
    resumed = _resume(tmp_path)
    assert "Repaired" in resumed.stderr
    _account(rows, tmp_path, "full disk, then resumed")


def test_workers_that_cannot_start_end_the_run_with_its_own_code(tmp_path):
    plugin = tmp_path / "dies_in_workers.py"
    plugin.write_text("import multiprocessing, os\n"
                      "if multiprocessing.current_process().name.startswith('auditor-w'):\n    os._exit(4)\n")
    proc = run_auditor("sweep", "--plugin", str(plugin), "--models", "bert", "--checks", "build", "--jobs", "1",
                       "-o", str(tmp_path / "out"))
    LEDGER["faults:workers that cannot start"] += 1
    assert proc.returncode == 3, proc.stderr
    assert "worker pool failed" in proc.stderr and "0 of 1 model types finished" in proc.stderr
    assert read_run(tmp_path / "out").results == ()  # readable: the header alone
    LEDGER["runs readable"] += 1


# -- resume refuses to mix experiments --------------------------------------------------------


OTHER_OPTIONS = [
    ("--checks", ["--checks", "build"]),
    ("--policies", ["--policies", "legacy"]),
    ("--device", ["--device", "cpu"]),
    ("--backend", ["--backend", "eager"]),
    ("--compile-policy", ["--compile-policy", "legacy"]),
    ("--compile-encoders", ["--compile-encoders"]),
    ("--build-per-policy", ["--build-per-policy"]),
    ("--label", ["--label", "other"]),
    ("--online", ["--online"]),
    ("--plugin", ["--plugin", TROUBLEMAKERS]),
]


@pytest.fixture(scope="module")
def refused_resumes(reference, tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, bytes, Path]]:
    """`--resume` of a copy of the reference run under each other option, and under another
    transformers (its header says 4.57.6), all at once (each only starts and refuses), by the
    option's name ("transformers" for the last): the run, the file before it, the file."""
    out, _ = reference
    root = tmp_path_factory.mktemp("refused")
    commands, files = {}, {}
    for option, flags in [*OTHER_OPTIONS, ("transformers", [])]:
        target = root / option.strip("-") / "results.jsonl"
        target.parent.mkdir()
        if option == "transformers":
            lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
            header = json.loads(lines[0])
            header["run"]["transformers"] = "4.57.6"
            target.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
        else:
            shutil.copy(out / "results.jsonl", target)
        checks = [] if option == "--checks" else ["--checks", "build,decorate"]
        commands[option] = ["sweep", "--models", MODELS, *checks, "--jobs", "1", "-o", str(target.parent),
                            "--resume", *flags]
        files[option] = (target.read_bytes(), target)
    procs = run_auditors(list(commands.values()), at_once=4)
    return {option: (proc, *files[option]) for option, proc in zip(commands, procs, strict=True)}


@pytest.mark.parametrize(("option", "flags"), OTHER_OPTIONS)
def test_resume_under_another_option_is_refused_naming_it(refused_resumes, option, flags):
    proc, before, results = refused_resumes[option]
    assert proc.returncode == 2, proc.stderr
    assert f"{option} (" in proc.stderr and "another experiment" in proc.stderr
    assert results.read_bytes() == before


def test_resume_under_another_transformers_is_refused(refused_resumes):
    proc, _, _ = refused_resumes["transformers"]
    assert proc.returncode == 2 and "transformers" in proc.stderr and "'4.57.6'" in proc.stderr, proc.stderr


def test_the_printed_resume_command_resumes_the_identical_experiment(reference, tmp_path):
    _, rows = reference
    options = ["--models", f"{MODELS},auditor_fine", "--plugin", TROUBLEMAKERS, "--checks", "build,decorate",
               "--policies", "legacy,fixed", "--build-per-policy", "--label", "resumed run", "--timeout", "200",
               "--max-memory", "6G", "--jobs", "1"]
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "sweep", *options, "-o", str(tmp_path)],
                            env=auditor_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: _done_records(tmp_path / "results.jsonl") >= 2, what="two model types")
    header = (tmp_path / "results.jsonl").read_text().splitlines()[0]
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    LEDGER["faults:Ctrl-C, then the printed resume command"] += 1
    command = next(line for line in stderr.splitlines() if line.startswith("Resume with: "))[len("Resume with: "):]
    words = shlex.split(command)
    assert words[:2] == ["auditor", "sweep"]
    for flag in ("--build-per-policy", "--label", "--timeout", "--max-memory", "--jobs", "--plugin", "--policies"):
        assert flag in words, (flag, command)
    resumed = run_auditor(*words[1:])  # verbatim: `auditor` is `python -m auditor` here
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "results.jsonl").read_text().splitlines()[0] == header  # one experiment, one header
    run = read_run(tmp_path)
    LEDGER["runs readable"] += 1
    assert run.done_model_types == {*MODELS.split(","), "auditor_fine"}
    # The real types' rows are the uninterrupted run's, for the two policies this run has.
    found = Counter({k: v for k, v in _rows(tmp_path).items() if json.loads(k)["model_type"] != "auditor_fine"})
    wanted = Counter({k: v for k, v in rows.items() if json.loads(k)["policy"] in ("", "legacy", "fixed")})
    LEDGER["rows lost"] += sum((wanted - found).values())
    LEDGER["rows duplicated or foreign"] += sum((found - wanted).values())
    assert found == wanted


def test_ray_executor_refuses_the_pool_s_limits():
    for flags in (["--max-memory", "4G"], ["--max-tasks-per-worker", "3"]):
        proc = run_auditor("sweep", "--executor", "ray", "--models", "bert", *flags, "-o", "/tmp/never-written")
        assert proc.returncode == 2 and flags[0] in proc.stderr and "local pool only" in proc.stderr, proc.stderr
