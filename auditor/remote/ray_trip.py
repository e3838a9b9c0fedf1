"""The by-value round trip through Ray: a task on a local cluster, with Ray's own cloudpickle.

Ray vendors its own copy of cloudpickle (`ray.cloudpickle`), so an engine registers
`transformers_modules` with that copy too. The cluster is local, on loopback. A sweep starts
one for all its workers (`LocalCluster`, in the parent); each worker joins it as a driver of
its own, so its tasks run in Ray workers that get a modules cache of their own, empty. A
RayTrip used outside a sweep starts a cluster of its own on first use.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys

TASK_TIMEOUT = 120.0
INSTALL_HINT = "pip install 'model-sweep-auditor[ray]'"


def ray_missing() -> str:
    """Why the Ray round trip cannot run here, or "" when it can."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray is not installed ({INSTALL_HINT})"
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
    """The sweep's own Ray cluster on loopback, started by the parent for all its workers.

    One cluster (GCS, raylet, agents: most of a gigabyte) instead of one per worker; a CPU per
    worker, so each worker's Ray worker process stays up between its tasks.
    """

    def __init__(self, cpus: int) -> None:
        self.cpus = cpus
        self._cache: str | None = None

    def start(self) -> str:
        """Start it; its address (host:port) for the workers to join. Raises on failure.

        Its Ray workers inherit an empty modules cache of their own through the environment of
        the processes that start them, rather than through a per-job runtime_env: so the Python
        workers that Ray starts ahead of time with the cluster serve the first tasks, instead
        of idling while each job starts workers of its own.
        """
        from auditor.remote.workspace import child_environment, scratch

        self._cache = scratch("ray-modules-")
        with child_environment(HF_MODULES_CACHE=self._cache):
            ray = _start_local(self.cpus)
        return ray.get_runtime_context().gcs_address

    def close(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None


class RayTrip:
    """The round trip from one process: joins `address` (a LocalCluster's), or, without one,
    starts a local cluster of its own on first use. `unavailable`: why the sweep has no
    cluster; every round trip then fails with that reason, without trying again."""

    def __init__(self, timeout: float = TASK_TIMEOUT, address: str = "", unavailable: str = "") -> None:
        self.timeout = timeout
        self.address = address
        self._task = None
        self._failure: Exception | None = RayUnavailable(unavailable) if unavailable else None
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

        if self.address and not ray.is_initialized():
            # A LocalCluster's: its workers have their own empty modules cache already.
            self._owns_cluster = True  # our connection: close() leaves the cluster, it stays up
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
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
        _start_local(1, runtime_env={"env_vars": env}, _system_config={"process_group_cleanup_enabled": False})
        return ray.remote(max_retries=0)(receive).options(num_cpus=1)


def _start_local(cpus: int, **options):
    """Start a local cluster on loopback with this process as its driver; the ray module."""
    from auditor.remote.workspace import workdir

    loopback_only()
    import ray

    ray.init(address="local", num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=80 * 2**20, log_to_driver=False, logging_level=logging.ERROR,
             _temp_dir=str(workdir() / "ray"),  # its session files go when this process does
             **options)
    return ray


def receive(parcel) -> dict:
    """Runs in the Ray worker: the facts of the config that arrived."""
    from auditor.receiver import config_facts

    return config_facts(parcel.config)
