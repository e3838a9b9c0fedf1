"""The sweep as tasks on a Ray cluster: the worker code, rows and statuses of the local pool.

Each model type is one Ray task. It runs `worker.run_case` in a Ray worker process (which
starts up as a pool worker does, once: `worker.prepare`) and streams the messages a pool worker
sends over its pipe (`protocol.py`), after a `started` that starts the type's clock. The driver
keeps the pool's promises:

* timeout: no `done` within --timeout of the task starting; the task is cancelled (Ray kills
  its worker) and the check that was running, and those after it, get `timeout` rows;
* crash: Ray retries a task whose worker died once; when the retry dies too, `crash` rows;
* oom: Ray's memory monitor killed the worker (Ray retries those itself until the timeout).

A row is computed where its header says. Each task first reports its worker's environment
(transformers, torch, Python, engine releases, auditor version: `protocol.environment`), before
any row; the driver compares it with the run's header, probed in the driver's own interpreter,
and a worker whose environment differs ends the sweep (EnvironmentMismatch, naming both; the
rows already written stay, and they were all computed in the header's environment). A cluster
started from another venv than the caller's would otherwise compute another transformers' rows
and store them under the caller's header.

Ray re-runs a retried task from the start and skips the messages already delivered, so a row
is never duplicated; rows delivered before a death are kept, as in the pool.

A worker whose device broke (worker.run_case's `retire`) is retired as the pool retires one: its
Ray worker process exits once the task has returned, takes no further type, and what of the type
ran in the broken context runs again as a task of its own (protocol.finish, the pool's rule).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor.checks import Options, model_runners
from auditor.core.classifier import Phase, classify
from auditor.core.messages import summary
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.executors import protocol
from auditor.executors.deaths import death_rows
from auditor.executors.pool import START_TIMEOUT, PoolError
from auditor.executors.protocol import MessageKind, TypeProgress, TypeTask
from auditor.models.cases import ModelCase
from auditor.remote.ray_trip import LOOPBACK_SYSTEM_CONFIG, check_reachable

POLL_SECONDS = 0.25
LOCAL_OBJECT_STORE_BYTES = 100 * 2**20  # messages are small; Ray's default takes 30% of RAM


class ClusterError(PoolError):
    """The Ray cluster cannot run the sweep: unreachable, too small, or its workers cannot start."""


class EnvironmentMismatch(ClusterError):
    """A Ray worker runs in another environment than the run's header records: its rows would lie."""


@dataclass(frozen=True)
class RaySettings:
    address: str | None  # None: start a local cluster on loopback, with `jobs` CPUs
    jobs: int
    timeout: float
    plugins: tuple[str, ...] = ()
    gpus_per_task: float = 0.0
    online: bool = False


@dataclass
class _Task:
    work: TypeTask
    submitted: float
    started: float | None = None
    worker: str = ""
    progress: TypeProgress = field(default_factory=TypeProgress)
    retirement: protocol.Retirement | None = None
    done: bool = False

    @property
    def case(self) -> ModelCase:
        return self.work.case


class RayExecutor:
    """Runs model cases as Ray tasks; iterate `run(cases)` for per-model batches, like WorkerPool."""

    def __init__(self, settings: RaySettings, options: Options) -> None:
        self.settings = _absolute_plugins(settings)
        self.options = options
        self._connected = False
        self._slots = 0
        self._remote = None
        self._any_started = False
        self._header = environment_here()  # what the run's header records: the same probe, here

    def connect(self) -> RayExecutor:
        """Join the cluster (or start the local one) now, so a bad address fails before any row."""
        if self._connected:
            return self
        if not self.settings.address:
            from auditor.remote.ray_trip import loopback_only

            loopback_only()
        import ray

        env = {} if self.settings.online else {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        common = dict(log_to_driver=False, logging_level=logging.ERROR, runtime_env={"env_vars": env})
        try:
            if self.settings.address:
                check_reachable(self.settings.address)
                ray.init(address=self.settings.address, **common)
            else:
                ray.init(address="local", num_cpus=self.settings.jobs, include_dashboard=False,
                         _node_ip_address="127.0.0.1", object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                         _system_config=LOOPBACK_SYSTEM_CONFIG, **common)
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError, TimeoutError...
            where = f"at {self.settings.address}" if self.settings.address else "on this machine"
            raise ClusterError(f"cannot reach a Ray cluster {where}: {exc}") from None
        self._connected = True
        try:
            self._slots = self._capacity(ray.cluster_resources())
        except ClusterError:
            self.close()
            raise
        self._remote = ray.remote(sweep_case).options(
            num_cpus=1, num_gpus=self._gpus(), max_retries=1, retry_exceptions=False)
        return self

    def run(self, cases: Sequence[ModelCase]) -> Iterator[list[Result]]:
        import ray

        pending = self._pending = deque(TypeTask(case) for case in cases)
        tasks: dict[object, _Task] = {}
        try:
            self.connect()
            since = time.monotonic()
            while pending or tasks:
                while pending and len(tasks) < self._slots:
                    work = pending.popleft()
                    ref = self._remote.remote(work.case, self.options, self.settings.plugins, work.only)
                    # The rows already decided count as received: a death's rows start after them.
                    progress = TypeProgress(check=work.only[0] if work.only else "", results=list(work.kept))
                    tasks[ref] = _Task(work, time.monotonic(), progress=progress)
                ready = self._ready(tasks)
                for ref in ready:
                    yield from self._drain(ref, tasks)
                yield from self._enforce_timeouts(tasks)
                if not self._any_started and time.monotonic() - since > START_TIMEOUT:
                    raise ClusterError(f"no Ray task started within {START_TIMEOUT:g} s; does the cluster "
                                       "have the CPUs (and GPUs) a task asks for?")
        finally:
            for ref in tasks:
                with contextlib.suppress(Exception):  # the cluster may be gone already
                    ray.cancel(ref, force=True)
            # No task's generator may outlive the cluster: one released after ray.shutdown() reaches
            # the shut-down core worker, and Ray ends the process with status 1 (seen at exit).
            tasks.clear()
            ref = ready = None  # noqa: F841
            self.close()

    def close(self) -> None:
        """Leave the cluster; a local one stops with us, a remote one ends our job's workers."""
        if self._connected:
            import gc

            import ray

            gc.collect()  # task refs held in cycles (an exception's frames) go while the core worker lives
            ray.shutdown()
            self._connected = False

    # -- internals -------------------------------------------------------------------

    def _ready(self, tasks: dict[object, _Task]) -> list:
        """The tasks with messages to deliver. A cluster that stops answering (its head gone, the
        connection lost) ends the run with ClusterError: the sweep's exit 3, rows kept."""
        import ray

        try:
            ready, _ = ray.wait(list(tasks), num_returns=1, timeout=POLL_SECONDS)
            if ready:
                ready, _ = ray.wait(list(tasks), num_returns=len(tasks), timeout=0)
        except (ray.exceptions.RaySystemError, ConnectionError) as exc:
            raise ClusterError(f"the Ray cluster stopped answering: {summary(exc)}") from None
        return ready

    def _gpus(self) -> float:
        """GPUs per task: only for sweeps with a check that runs models on --device."""
        return self.settings.gpus_per_task if model_runners(self.options.checks) else 0.0

    def _capacity(self, resources: dict[str, float]) -> int:
        """How many tasks to keep in flight: --jobs on the local cluster, what fits on a remote one."""
        cpus = int(resources.get("CPU", 0))
        slots = min(self.settings.jobs, cpus) if not self.settings.address else cpus
        gpus = self._gpus()
        if gpus:
            if not resources.get("GPU"):
                raise ClusterError(f"--gpus-per-task {gpus:g}: the Ray cluster has no GPUs")
            slots = min(slots, int(resources["GPU"] / gpus))
        if slots < 1:
            raise ClusterError(f"the Ray cluster has no room for one task ({resources})")
        return slots

    def _drain(self, ref, tasks: dict[object, _Task]) -> Iterator[list[Result]]:
        """Handle every message the task has delivered; yield its batch once it is finished."""
        import ray

        task = tasks[ref]
        while ray.wait([ref], timeout=0)[0]:
            try:
                message = ray.get(next(ref))
            except StopIteration:  # ended without "done": never expected from run_case
                message = protocol.error("the Ray task ended without finishing its model type")
            except Exception as exc:
                if isinstance(exc, ray.exceptions.RayTaskError) and task.started is None:
                    raise ClusterError(f"a Ray worker cannot get ready: {summary(exc.cause or exc)}") from None
                del tasks[ref]
                failure = classify(exc, Phase.TASK)
                yield [*task.progress.results, *self._death_rows(task, failure.status, failure.message)]
                return
            finished = self._handle(task, message)
            if task.done:
                del tasks[ref]
                if finished is not None:  # None: part of the type runs again first (protocol.finish)
                    yield finished
                return

    def _handle(self, task: _Task, message: protocol.Message) -> list[Result] | None:
        kind, payload = task.progress.take(message)
        if kind is MessageKind.STARTED:
            task.started, task.worker = time.monotonic(), payload
            self._any_started = True
        elif kind is MessageKind.ENVIRONMENT:
            self._check_environment(task, *payload)
        elif kind is MessageKind.RETIRE:
            task.retirement = protocol.Retirement.from_json(payload)
        elif kind is MessageKind.DONE:
            task.done = True
            rows, again = protocol.finish(task.work, task.progress.results, task.retirement, task.worker)
            if again is not None:
                self._pending.appendleft(again)
            return rows
        elif kind is MessageKind.ERROR:
            task.done = True
            return [*task.progress.results, *self._death_rows(task, Status.CRASH, f"Crash: {payload}")]
        return None

    def _check_environment(self, task: _Task, worker: str, found: dict) -> None:
        from auditor.core.runinfo import environment_differences

        differences = environment_differences(self._header, found)
        if differences:
            raise EnvironmentMismatch(
                f"the Ray worker {worker} that took {task.case.model_type} runs another environment "
                f"than this run's header: {'; '.join(differences)}. No row of it was written; install the "
                "caller's releases on the cluster's nodes (or start the cluster from the caller's venv)")

    def _enforce_timeouts(self, tasks: dict[object, _Task]) -> Iterator[list[Result]]:
        import ray

        now = time.monotonic()
        for ref, task in list(tasks.items()):
            if task.started is not None and now - task.started > self.settings.timeout:
                yield from self._drain(ref, tasks)  # it may have finished just now
                if ref in tasks:
                    ray.cancel(ref, force=True)
                    del tasks[ref]
                    message = f"Timeout: no result after {self.settings.timeout:g} s"
                    yield [*task.progress.results, *self._death_rows(task, Status.TIMEOUT, message)]

    def _death_rows(self, task: _Task, status: Status, message: str) -> list[Result]:
        seconds = time.monotonic() - (task.started or task.submitted)
        return death_rows(task.case, self.options, task.progress, status, message,
                          seconds=seconds, worker=task.worker)


def environment_here() -> dict[str, str]:
    """This process's environment as a run's header records it (auditor.core.runinfo.environment)."""
    from auditor import engines
    from auditor.core.runinfo import environment

    return environment({engine.name: engine.version for engine in engines.all()})


def _absolute_plugins(settings: RaySettings) -> RaySettings:
    """Plugin files as absolute paths: a Ray worker's working directory is not the driver's."""
    from dataclasses import replace

    plugins = tuple(str(Path(p).resolve()) if p.endswith(".py") or Path(p).is_file() else p
                    for p in settings.plugins)
    return replace(settings, plugins=plugins)


# -- what runs in the Ray worker ---------------------------------------------------------

_PREPARED: dict[tuple, list] = {}  # (plugins, options) -> the check objects, once per worker process
_RETIRED = {"why": ""}  # why this worker process's device broke: it takes no further type
RETIRE_EXIT_SECONDS = 0.5  # after the retiring task returns, so that Ray has its end first


def sweep_case(case: ModelCase, options: Options, plugins: tuple[str, ...],
               only: tuple[str, ...] = ()) -> Iterator[tuple]:
    """A Ray task (a generator: Ray streams each message to the driver as it is yielded)."""
    import ray

    from auditor.executors.worker import prepare, run_case

    if _RETIRED["why"]:  # a task that reached a retired process before it exited: Ray retries it elsewhere
        os._exit(1)
    worker = f"{ray.util.get_node_ip_address()}:{os.getpid()}"  # which node and process made the rows
    yield protocol.environment(worker, environment_here())  # before the imports: a mismatch costs nothing
    key = (plugins, options)
    if key not in _PREPARED:  # a Ray worker process runs many tasks: start up once
        _PREPARED[key] = prepare(plugins, options)
    yield protocol.started(worker)
    for message in run_case(case, _PREPARED[key], options, worker=worker, only=only):
        if message[0] == MessageKind.RETIRE.value:
            _RETIRED["why"] = message[1]["why"]
        yield message
    if _RETIRED["why"]:  # its device can run nothing more: the process ends once the task has returned
        import threading

        threading.Timer(RETIRE_EXIT_SECONDS, os._exit, (0,)).start()
