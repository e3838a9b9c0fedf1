"""Real Ray clusters of `ray start` processes on this machine, for the tests that need a cluster
whose Python differs from the caller's, or a node to kill: a head, nodes joining it, each a node
of its own (its raylet, its workers), stopped by killing only their own processes.

Each node gets a temporary directory of its own (`--temp-dir`), so its processes are found by it:
`ray stop` would stop every Ray process of the user on the machine, other sessions' included.
Ray 2.60 wants RAY_AUTH_MODE=token on the head and on everyone who joins it; `env()` gives it.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from tests.conftest import auditor_env


def env(**extra: str) -> dict[str, str]:
    """The environment of a `ray start` and of whoever joins the cluster."""
    env = {**auditor_env(), "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0", **extra}
    # As from a user's shell: Ray's cluster mode as Ray sets it here, whatever a sweep run inside
    # this test process set (off, which stops `ray start --address` from joining a head on Linux).
    if "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in extra:
        env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    return env


def _ray() -> str:
    import shutil
    import sys

    found = Path(sys.executable).with_name("ray")
    return str(found) if found.is_file() else (shutil.which("ray") or "ray")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A head started by `start()`, nodes by `join()`; `stop()` kills every process of theirs."""

    def __init__(self) -> None:
        self.address = ""
        self.nodes: dict[str, Path] = {}  # name -> its temp dir (short: Ray's socket paths are limited)

    def start(self, cpus: int = 1, **extra_env: str) -> str:
        port = _free_port()
        self._node("head", ["--head", "--port", str(port), "--include-dashboard", "false"], cpus, extra_env)
        self.address = f"127.0.0.1:{port}"
        return self.address

    def join(self, name: str, cpus: int = 1, **extra_env: str) -> None:
        self._node(name, ["--address", self.address], cpus, extra_env)

    def _node(self, name: str, how: list[str], cpus: int, extra_env: dict[str, str]) -> None:
        temp = Path(tempfile.mkdtemp(prefix="rn", dir="/tmp"))
        self.nodes[name] = temp
        proc = subprocess.run([_ray(), "start", *how, "--num-cpus", str(cpus), "--node-ip-address", "127.0.0.1",
                               "--temp-dir", str(temp), "--object-store-memory", str(80 * 2**20),
                               "--disable-usage-stats"],
                              env=env(**extra_env), capture_output=True, text=True, timeout=180)
        if proc.returncode:
            self.stop()
            raise RuntimeError(f"ray start {' '.join(how)} failed: {proc.stderr[-3000:]}")

    def processes(self, name: str) -> list[psutil.Process]:
        """A node's processes: those naming its temp dir, and every descendant of theirs (the
        workers, and what a task started)."""
        mark = str(self.nodes[name])
        found = {}
        for proc in psutil.process_iter(["cmdline"]):
            if any(mark in part for part in proc.info["cmdline"] or ()):
                found[proc.pid] = proc
                for child in _children(proc):
                    found[child.pid] = child
        return list(found.values())

    def kill(self, name: str) -> None:
        """The node gone at once, as a machine lost (SIGKILL to each of its processes)."""
        for proc in self.processes(name):
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass

    def stop(self) -> None:
        import shutil

        for name in reversed(list(self.nodes)):
            self.kill(name)
        time.sleep(0.5)
        for temp in self.nodes.values():  # the nodes' sessions and logs
            shutil.rmtree(temp, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def transformers_elsewhere(release: str, root: Path) -> Path:
    """A folder holding transformers `release` alone (no dependencies: they are this venv's): put
    first on a node's PYTHONPATH, its workers import and report that release, as a cluster started
    from a venv of another transformers would. uv installs it from its cache (or the index)."""
    import shutil
    import sys

    target = root / f"transformers-{release}"
    if not (target / "transformers").is_dir():
        uv = Path(sys.executable).with_name("uv")
        subprocess.run([str(uv) if uv.is_file() else shutil.which("uv") or "uv", "pip", "install", "--quiet",
                        "--no-deps", "--target", str(target), f"transformers=={release}"], check=True, timeout=300)
    return target
