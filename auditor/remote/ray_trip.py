"""The by-value round trip through Ray: a task on a local cluster, with Ray's own cloudpickle.

Ray vendors its own copy of cloudpickle (`ray.cloudpickle`), so an engine registers
`transformers_modules` with that copy too. The cluster is local, on loopback, started once
per worker on first use; its worker processes get a modules cache of their own, empty.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import tempfile

TASK_TIMEOUT = 120.0
INSTALL_HINT = "pip install 'model-sweep-auditor[ray]'"


def ray_missing() -> str:
    """Why the Ray round trip cannot run here, or "" when it can."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray is not installed ({INSTALL_HINT})"
    return ""


class RayTrip:
    """A local Ray cluster of this process, started on first use."""

    def __init__(self, timeout: float = TASK_TIMEOUT) -> None:
        self.timeout = timeout
        self._task = None
        self._failure: Exception | None = None
        self._cache: str | None = None
        self._owns_cluster = False

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

        self._cache = tempfile.mkdtemp(prefix="auditor-ray-modules-")
        env = {"HF_MODULES_CACHE": self._cache, "HF_HUB_OFFLINE": "1"}
        if ray.is_initialized():
            # Inside a task of `auditor sweep --executor ray`: the sweep's own cluster is the far
            # side (a second cluster cannot be started from a Ray worker, nor may it leave this one).
            return ray.remote(max_retries=0)(receive).options(num_cpus=1, runtime_env={"env_vars": env})
        from auditor.remote.workspace import workdir

        self._owns_cluster = True
        ray.init(
            address="local",
            num_cpus=1,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            object_store_memory=80 * 2**20,
            log_to_driver=False,
            logging_level=logging.ERROR,
            runtime_env={"env_vars": env},
            _temp_dir=str(workdir() / "ray"),  # its session files go when this process does
            # Ray puts each of its workers in a process group of its own; kept in ours instead,
            # they die with the sweep worker when the pool kills its group (timeout, Ctrl-C).
            _system_config={"process_group_cleanup_enabled": False},
        )
        return ray.remote(max_retries=0)(receive).options(num_cpus=1)


def receive(parcel) -> dict:
    """Runs in the Ray worker: the facts of the config that arrived."""
    from auditor.receiver import config_facts

    return config_facts(parcel.config)
