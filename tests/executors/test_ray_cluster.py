"""`auditor sweep --executor ray` end to end, on local Ray clusters of 2 CPUs on this machine."""

import logging
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import TROUBLEMAKERS, auditor_env, by_type, read_rows, run_auditors

pytest.importorskip("ray", reason="Ray is not installed (the optional extra: pip install -e '.[ray]')")

REAL = "bert,gpt2,llama,t5,whisper,llava,mixtral,vit,clip,qwen2"
FLAKY = str(Path(__file__).parent / "plugins" / "flaky.py")
NODE_WORKER = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+$")  # node IP : worker pid


@pytest.fixture(scope="module")
def ray_cluster():
    """A cluster started by the test process, as `ray start --head` would; the CLI joins it."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=100 * 2**20, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _cells(out: Path) -> dict:
    """Every row but its timing and the worker (node) that produced it."""
    cells = {}
    for row in read_rows(out)[1]:
        key = (row["model_type"], row["check"], row["component"], row["policy"])
        assert key not in cells, f"duplicate row {key}"
        cells[key] = {k: v for k, v in row.items() if k not in ("seconds", "worker")}
    return cells


def test_ray_tasks_give_the_rows_of_the_local_pool(ray_cluster, tmp_path):
    # The two sweeps at once: the cluster's 2 CPUs and the pool's 2 workers share the machine.
    on_ray, local = run_auditors([
        ["sweep", "--executor", "ray", "--ray-address", ray_cluster, "--models", REAL, "-o", str(tmp_path / "ray")],
        ["sweep", "--jobs", "2", "--models", REAL, "-o", str(tmp_path / "local")],
    ])
    assert on_ray.returncode == 0, on_ray.stderr
    assert local.returncode == 0, local.stderr

    assert _cells(tmp_path / "ray") == _cells(tmp_path / "local")
    assert set(by_type(read_rows(tmp_path / "ray")[1])) == set(REAL.split(","))
    workers = {row["worker"] for row in read_rows(tmp_path / "ray")[1]}
    assert workers and all(NODE_WORKER.match(worker) for worker in workers), workers
    assert {row["worker"] for row in read_rows(tmp_path / "local")[1]} <= {"w1", "w2"}


def test_a_dead_worker_is_retried_once_then_the_type_is_a_crash(tmp_path):
    """No --ray-address: the sweep starts its own cluster on loopback, and stops it. The timeout
    covers Ray's retry, a new worker process importing torch and transformers: 30 s was not enough
    on a loaded machine (load 27: the retried type came out `timeout`)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {**auditor_env(), "AUDITOR_TEST_MARKERS": str(markers)}
    proc = subprocess.run(
        [sys.executable, "-m", "auditor", "sweep", "--executor", "ray", "--jobs", "2", "--reruns", "0",
         "--plugin", TROUBLEMAKERS, "--plugin", FLAKY, "--checks", "build,decorate", "--timeout", "60",
         "--models", "gpt2,auditor_fine,auditor_exit,auditor_exit_once,auditor_hang", "-o", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    header, rows = read_rows(tmp_path / "out")
    build = by_type(rows)
    assert set(build) == {"gpt2", "auditor_fine", "auditor_exit", "auditor_exit_once", "auditor_hang"}
    assert build["gpt2"]["status"] == build["auditor_fine"]["status"] == "build"
    # Died on the first try, built on Ray's retry in a new worker process.
    assert build["auditor_exit_once"]["status"] == "build"
    assert (markers / "auditor_exit_once").read_text() != build["auditor_exit_once"]["worker"].split(":")[1]
    # Died on both tries: every check of the type says so, the sweep went on.
    exits = [row for row in rows if row["model_type"] == "auditor_exit"]
    assert {row["check"] for row in exits} == {"build", "decorate"}
    assert {row["status"] for row in exits} == {"crash"}
    assert "died, also on the retry" in build["auditor_exit"]["message"]
    assert build["auditor_hang"]["status"] == "timeout"
    assert build["auditor_hang"]["message"] == "Timeout: no result after 60 s"
    assert all(row["worker"].startswith("127.0.0.1:") for row in rows), {row["worker"] for row in rows}
    assert header["run"]["command"].startswith("auditor sweep --executor ray")


def test_ctrl_c_keeps_finished_rows_and_stops_the_local_cluster(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor", "sweep", "--executor", "ray", "--jobs", "1", "--checks", "build", "--reruns", "0",
         "--plugin", TROUBLEMAKERS, "--models", "auditor_fine,auditor_hang", "-o", str(tmp_path)],
        env=auditor_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    results = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 2):
        time.sleep(0.2)
    if proc.poll() is not None:  # say why, rather than find no cluster
        pytest.fail(f"the sweep ended before its first row (exit {proc.returncode}): {proc.communicate()[1][-3000:]}")
    assert results.exists() and results.read_text().count("\n") >= 2, "no row after 180 s"
    cluster = psutil.Process(proc.pid).children(recursive=True)  # gcs_server, raylet, Ray workers
    assert cluster
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Interrupted" in stderr and "--resume" in stderr and "--executor ray" in stderr
    assert {row["model_type"] for row in read_rows(tmp_path)[1]} == {"auditor_fine"}
    time.sleep(1.0)
    assert not [p for p in cluster if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]

