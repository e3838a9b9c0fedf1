"""The by-value round trip through Ray: a task on a local cluster, with Ray's own cloudpickle.

Ray vendors its own copy of cloudpickle (`ray.cloudpickle`), so an engine registers
`transformers_modules` with that copy too. The cluster is local, on loopback. A sweep starts
one for all its workers (`LocalCluster`, from a helper process, while the workers start); it
announces its address, or why it did not start, in a small JSON file, and each worker waits
for that file and joins the cluster as a driver of its own, so its tasks run in Ray workers
that get a modules cache of their own, empty. A RayTrip used outside a sweep starts a
cluster of its own on first use.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from auditor.core.hints import install_hint

TASK_TIMEOUT = 120.0
ANNOUNCE_TIMEOUT = 180.0  # seconds a worker waits for the sweep's cluster to say whether it started
STOP_TIMEOUT = 30.0  # seconds for the cluster's helper to stop it
CONNECT_TIMEOUT = 10.0  # seconds for a cluster's address to answer at all
# The RayConfig of every local cluster the auditor starts on loopback (its drivers and workers
# take it from the raylet). Such a cluster has no GCS fault tolerance: once its GCS is gone it
# never comes back, so its drivers give up on it after 10 s rather than Ray's 60 (the type in
# flight is then a `crash` and the Ray cells after it say the cluster is gone, a minute sooner).
LOOPBACK_SYSTEM_CONFIG = {"gcs_rpc_server_reconnect_timeout_s": 10}


def ray_missing() -> str:
    """Why the Ray round trip cannot run here, or "" when it can."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray is not installed ({install_hint('ray')})"
    return ""


def loopback_only() -> None:
    """Keep a local cluster on 127.0.0.1, never on the machine's routable address (an open Ray
    cluster runs anyone's code). Ray takes the routable one unless its cluster mode is off,
    which it reads from RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when imported: so the variable is set
    for the processes the cluster starts, and the constant too where ray is already imported.
    A user who set the variable to 1 keeps Ray's own choice."""
    if os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0") == "0":
        constants = sys.modules.get("ray._private.ray_constants")
        if constants is not None:
            constants.ENABLE_RAY_CLUSTER = False


class RayUnavailable(RuntimeError):
    """The sweep's cluster did not start; every Ray row says why."""


class LocalCluster:
    """The sweep's own Ray cluster on loopback, for all its workers.

    One cluster (GCS, raylet, agents: most of a gigabyte) instead of one per worker; a CPU per
    worker, so each worker's Ray worker process stays up between its tasks. A helper process of
    its own starts it and is its head's driver: so the cluster starts while the sweep's workers
    import torch and transformers, and the parent is never a Ray driver. The helper stops the
    cluster when asked, or when the parent is gone (its pipe closes).
    """

    def __init__(self, cpus: int) -> None:
        self.cpus = cpus
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn = None
        self._directory: str | None = None

    def reserve(self) -> str:
        """The announcement's path, for `await_cluster`, before the cluster is started: workers
        spawned with it wait there until `launch` has started the cluster (or say why not)."""
        # Ray's token authentication, which a new local cluster turns on by default, set here
        # rather than in the helper: the workers started from this process afterwards (the
        # sweep's, which may start before the cluster) inherit the mode and present the token
        # (Ray keeps it in ~/.ray/auth_token) when they join. A mode the user chose is kept.
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        if self._directory is None:
            from auditor.remote.workspace import scratch

            self._directory = scratch("ray-cluster-")
            (Path(self._directory) / "modules").mkdir()
        return str(Path(self._directory) / "cluster.json")

    def launch(self) -> None:
        """Start it, without waiting (once; `reserve` first if not yet done).

        Its Ray workers inherit an empty modules cache of their own through the environment of
        the processes that start them (the helper, then the raylet), rather than through a
        per-job runtime_env: so the Python workers that Ray starts ahead of time with the
        cluster serve the first tasks, instead of idling while each job starts workers of its
        own.
        """
        if self._process is not None:
            return
        from auditor.remote.workspace import child_environment

        announcement = self.reserve()
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        self._process = ctx.Process(target=_head, args=(theirs, self.cpus, announcement),
                                    name="auditor-ray-head", daemon=True)
        with child_environment(HF_MODULES_CACHE=str(Path(self._directory) / "modules")):
            self._process.start()
        theirs.close()
        self._conn = ours

    def start(self) -> str:
        """`reserve`, then `launch`: the announcement's path."""
        self.launch()
        return self.reserve()

    def close(self) -> None:
        """Stop it and wait for it; the helper is killed if it does not end in time."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(None)
            process.join(STOP_TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join(5.0)
            from auditor.remote.workspace import remove_workdir_of

            remove_workdir_of(process.pid)  # its Ray session files, if it had no time to remove them
            self._conn.close()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None


def _head(conn, cpus: int, announcement: str) -> None:
    """Entry point of LocalCluster's helper process: start the cluster, say so, keep it up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle
    try:
        ray = _start_local(cpus)
        address = ray.get_runtime_context().gcs_address
    except Exception as exc:
        _announce(announcement, error="RayClusterError: the sweep's local Ray cluster did not start: "
                                     f"{type(exc).__name__}: {exc}")
        return
    _announce(announcement, address=address)
    with contextlib.suppress(EOFError, OSError):
        conn.recv()  # None: stop; EOF: the parent is gone
    ray.shutdown()


def _announce(path: str, **fields: str) -> None:
    """Write the announcement whole: a reader never sees half of it."""
    partial = f"{path}.partial"
    Path(partial).write_text(json.dumps(fields), encoding="utf-8")
    os.replace(partial, path)


def await_cluster(announcement: str, timeout: float = ANNOUNCE_TIMEOUT) -> str:
    """The address a LocalCluster announced in `announcement`, once it has; RayUnavailable with
    its reason when it did not start, or when nothing came within `timeout` seconds."""
    path = Path(announcement)
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RayUnavailable(f"RayClusterError: the sweep's local Ray cluster did not say within "
                                 f"{timeout:g} s whether it started ({announcement})")
        time.sleep(0.05)
    fields = json.loads(path.read_text(encoding="utf-8"))
    if "error" in fields:
        raise RayUnavailable(fields["error"])
    return fields["address"]


def join(announcement: str) -> None:
    """Join the LocalCluster that announces itself in `announcement`, as a driver of its own,
    once it is up (as each of the sweep's workers does); RayUnavailable if it did not start, or
    is gone (a worker started after the cluster died must not wait on it: ray.init would)."""
    loopback_only()  # Ray would otherwise swap 127.0.0.1 for the machine's routable address
    import ray

    address = await_cluster(announcement)
    try:
        check_reachable(address)
    except ConnectionError as exc:
        raise RayUnavailable(f"RayClusterError: the sweep's local Ray cluster is gone: {exc}") from None
    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)


def cluster_gone(announcement: str, timeout: float = 2.0) -> str:
    """Why the LocalCluster announced in `announcement` is gone ("" when its GCS still answers, or
    when it never started: then no worker joined it). Ray ends a driver whose cluster died, so
    the pool asks this before it blames a dead worker on its model type."""
    try:
        address = await_cluster(announcement, timeout=0)
    except (RayUnavailable, OSError, ValueError, KeyError):
        return ""
    try:
        check_reachable(address, timeout=timeout)
    except ConnectionError as exc:
        return f"the sweep's local Ray cluster is gone ({exc})"
    return ""


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """ConnectionError in seconds for a HOST:PORT where nothing listens: ray.init would retry for
    many minutes."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", or a scheme Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc.strerror or exc})") from None


class RayTrip:
    """The round trip from one process: joins the LocalCluster that announces itself in
    `cluster` (the file that `LocalCluster.start` returned), or, without one, starts a local
    cluster of its own on first use. A cluster that did not start fails every round trip with
    its reason, without trying again."""

    def __init__(self, timeout: float = TASK_TIMEOUT, cluster: str = "") -> None:
        self.timeout = timeout
        self.cluster = cluster
        self._task = None
        self._failure: Exception | None = None
        self._cache: str | None = None
        self._owns_cluster = False  # whether close() leaves (or stops) a cluster

    def start(self) -> None:
        """Start the cluster now (it is otherwise started on first use)."""
        self._started()

    def round_trip(self, parcel) -> dict:
        """Send `parcel` to a Ray task by value; the facts of the config it received."""
        import ray

        from auditor.remote.byvalue import register_by_value

        task = self._started()
        ray.cloudpickle.register_pickle_by_value(register_by_value())
        return ray.get(task.remote(parcel), timeout=self.timeout)

    def close(self) -> None:
        if self._task is not None:
            import ray

            if self._owns_cluster:
                ray.shutdown()
            self._task = None
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None

    def _started(self):
        if self._failure is not None:
            raise self._failure  # a cluster that would not start is not retried per model type
        if self._task is None:
            try:
                self._task = self._start()
            except Exception as exc:
                self._failure = exc
                raise
        return self._task

    def _start(self):
        import ray

        if self.cluster and not ray.is_initialized():
            # A LocalCluster's: its workers have their own empty modules cache already.
            join(self.cluster)
            self._owns_cluster = True  # our connection: close() leaves the cluster, it stays up
            return ray.remote(max_retries=0)(receive).options(num_cpus=1)
        from auditor.remote.workspace import scratch

        self._cache = scratch("ray-modules-")
        env = {"HF_MODULES_CACHE": self._cache, "HF_HUB_OFFLINE": "1"}
        if ray.is_initialized():
            # Inside a task of `auditor sweep --executor ray`: the sweep's own cluster is the far
            # side (a second cluster cannot be started from a Ray worker, nor may it leave this one).
            return ray.remote(max_retries=0)(receive).options(num_cpus=1, runtime_env={"env_vars": env})
        self._owns_cluster = True
        # Ray puts each of its workers in a process group of its own; kept in ours instead, they
        # die with the sweep worker when the pool kills its group (timeout, Ctrl-C).
        _start_local(1, runtime_env={"env_vars": env}, process_group_cleanup_enabled=False)
        return ray.remote(max_retries=0)(receive).options(num_cpus=1)


def _start_local(cpus: int, runtime_env: dict | None = None, **system_config):
    """Start a local cluster on loopback with this process as its driver; the ray module.
    `system_config`: RayConfig entries on top of LOOPBACK_SYSTEM_CONFIG."""
    from auditor.remote.workspace import workdir

    loopback_only()
    import ray

    ray.init(address="local", num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=80 * 2**20, log_to_driver=False, logging_level=logging.ERROR,
             _temp_dir=str(workdir() / "ray"),  # its session files go when this process does
             runtime_env=runtime_env, _system_config={**LOOPBACK_SYSTEM_CONFIG, **system_config})
    return ray


def receive(parcel) -> dict:
    """Runs in the Ray worker: the facts of the config that arrived."""
    from auditor.remote.receiver import config_facts

    return config_facts(parcel.config)
