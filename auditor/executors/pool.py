"""A pool of long-lived worker processes: timeouts, crashes, memory limits and replacement.

Each worker imports torch and transformers once and then takes model types one by
one. The pool yields one batch of results per model type, whatever happened to it:
a hang becomes a `timeout` row, a dead process a `crash` row, a worker over the
memory limit an `oom` row; the worker is replaced and the sweep goes on.

A worker whose device broke (a sticky device error in a row, or a failed probe after a type:
auditor.executors.worker.run_case) retires after that type; the pool waits for it to exit (its
device memory freed) before a fresh worker starts, and what of the type ran in the broken context
runs again there: the checks left unrun after the culprit's row, or the whole type when the probe
found the device broken only after it (once; that rerun decides). No other type ever runs in a
broken context, so no other type's row carries the culprit's error.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait

from auditor.checks import Options
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.executors import protocol
from auditor.executors.deaths import death_rows
from auditor.executors.protocol import MessageKind, TypeProgress, TypeTask
from auditor.models.cases import ModelCase

POLL_SECONDS = 0.25
# How often a busy worker's memory is measured (its own and its children's resident memory).
MEMORY_POLL_SECONDS = 0.25
# How often a worker's children (its receiver, ...) are looked up again: finding them reads the
# /proc entry of every process on the machine, which at every poll cost the parent a second of
# CPU per sweep; reading the memory of processes already known costs next to nothing.
CHILDREN_SECONDS = 2.0
START_TIMEOUT = 300.0
MAX_FAILED_STARTS = 3
# How long a retiring worker gets to exit on its own (freeing its device) before it is killed.
RETIRE_SECONDS = 30.0


class PoolError(RuntimeError):
    """The pool cannot go on: workers fail to start."""


@dataclass(frozen=True)
class PoolSettings:
    jobs: int
    timeout: float
    max_memory: int | None  # bytes of resident memory per worker (with its children)
    plugins: tuple[str, ...] = ()
    # The limit of a worker that runs alone (`run_alone`: an oom rerun): --max-memory auto shares
    # 80% of the machine's memory between the jobs, and a worker alone gets the whole of it; None:
    # the same as max_memory.
    alone_memory: int | None = None
    max_tasks_per_worker: int = 0  # 0: never recycle
    # Where the workers' stdout and stderr go (warnings, crash tracebacks); "": inherited.
    log_file: str = ""


@dataclass
class _Worker:
    name: str
    process: multiprocessing.process.BaseProcess
    conn: object
    ready: bool = False
    case: ModelCase | None = None
    task: TypeTask | None = None
    retirement: protocol.Retirement | None = None
    started: float = 0.0
    progress: TypeProgress = field(default_factory=TypeProgress)
    tasks: int = 0
    spawned: float = field(default_factory=time.monotonic)
    memory_checked: float = 0.0
    footprint: _Footprint | None = None


class WorkerPool:
    """Runs model cases on worker processes; iterate `run(cases)` for per-model batches."""

    def __init__(self, settings: PoolSettings, options: Options) -> None:
        self.settings = settings
        self.options = options
        self._ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._serial = 0
        self._failed_starts = 0

    def start(self) -> None:
        """Start the workers now, before the model types are known: each imports torch and
        transformers (seconds) while the parent discovers and selects the types. `run` keeps as
        many as it needs and stops the rest, or starts the others. No more than the machine has
        cores start early: beyond them the imports only contend (--jobs 20 on 2 cores started 20
        imports for a one-type sweep: 20 s instead of 4)."""
        if not self._workers:
            self._workers = [self._spawn() for _ in range(max(1, min(self.settings.jobs, os.cpu_count() or 1)))]

    def run(self, cases: Sequence[ModelCase]) -> Iterator[list[Result]]:
        pending = deque(TypeTask(case) for case in cases)
        jobs = max(1, min(self.settings.jobs, len(pending)))
        try:
            for surplus in self._workers[jobs:]:
                _kill(surplus)
            self._workers = self._workers[:jobs]
            self._workers += [self._spawn() for _ in range(jobs - len(self._workers))]
            while pending or any(w.case for w in self._workers):
                self._assign(pending)
                yield from self._collect(pending)
                yield from self._enforce_limits()
        finally:
            self.close()

    @property
    def more_memory_alone(self) -> bool:
        """Whether a worker alone may take more memory than one of the jobs (--max-memory auto
        with more than one job): what makes an `oom` worth rerunning alone (sweeping/confirm.py)."""
        alone, share = self.settings.alone_memory, self.settings.max_memory
        return alone is not None and share is not None and alone > share

    def run_alone(self, cases: Sequence[ModelCase]) -> Iterator[list[Result]]:
        """`run`, one worker at a time under `alone_memory`: the rerun of a type that went over its
        share of the machine's memory (the jobs' share), with nothing else running beside it."""
        shared = self.settings
        limit = shared.alone_memory if shared.alone_memory is not None else shared.max_memory
        self.settings = replace(shared, jobs=1, max_memory=limit)
        try:
            yield from self.run(cases)
        finally:
            self.settings = shared

    def close(self) -> None:
        """Stop every worker: ask politely, then kill its process group."""
        for worker in self._workers:
            if worker.process.is_alive() and worker.case is None and worker.ready:
                try:
                    worker.conn.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + 2.0
        for worker in self._workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            _kill(worker)
        self._workers = []

    # -- internals -------------------------------------------------------------------

    def _spawn(self) -> _Worker:
        from auditor.executors import worker as worker_module

        self._serial += 1
        name = f"w{self._serial}"
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=worker_module.main,
            args=(child, name, self.settings.plugins, self.options, self.settings.log_file),
            name=f"auditor-{name}",
            daemon=True,
        )
        process.start()
        child.close()
        return _Worker(name=name, process=process, conn=parent)

    def _assign(self, pending: deque[TypeTask]) -> None:
        for worker in self._workers:
            if worker.ready and worker.case is None and pending:
                task = pending.popleft()
                worker.case, worker.task, worker.started = task.case, task, time.monotonic()
                # The rows already decided count as received: a death's rows start after them.
                worker.progress = TypeProgress(check=task.only[0] if task.only else "", results=list(task.kept))
                worker.conn.send((task.case, task.only))

    def _collect(self, pending: deque[TypeTask]) -> Iterator[list[Result]]:
        sources = [w.conn for w in self._workers] + [w.process.sentinel for w in self._workers]
        for source in wait(sources, timeout=POLL_SECONDS):
            worker = next(
                (w for w in self._workers if source is w.conn or source == w.process.sentinel), None
            )
            if worker is None:
                continue
            if source is worker.conn:
                yield from self._drain(worker, pending)
            elif not worker.process.is_alive():
                yield from self._drain(worker, pending)  # messages sent just before it died
                if worker in self._workers:
                    yield from self._replace(worker, self._death_row(worker))

    def _drain(self, worker: _Worker, pending: deque[TypeTask]) -> Iterator[list[Result]]:
        while worker in self._workers:
            try:
                if not worker.conn.poll():
                    return
                message = worker.conn.recv()
            except (EOFError, OSError):
                return
            kind, payload = worker.progress.take(message)
            if kind is MessageKind.READY:
                worker.ready = True
                self._failed_starts = 0
            elif kind is MessageKind.RETIRE:
                worker.retirement = protocol.Retirement.from_json(payload)
            elif kind is MessageKind.DONE:
                finished = self._finish(worker, pending)
                if finished is not None:
                    yield finished
                if worker.retirement is not None:
                    worker.process.join(RETIRE_SECONDS)  # the fresh worker starts once this one is gone
                    yield from self._replace(worker, None)
                elif self._recycle_due(worker):
                    yield from self._replace(worker, None)

    def _finish(self, worker: _Worker, pending: deque[TypeTask]) -> list[Result] | None:
        """The model type's rows, once it is done; None when part of it runs again first (its
        worker retired: protocol.finish), put at the queue's front."""
        task, retirement = worker.task, worker.retirement
        assert task is not None
        results, worker.case, worker.task, worker.progress = worker.progress.results, None, None, TypeProgress()
        worker.tasks += 1
        rows, again = protocol.finish(task, results, retirement, worker.name)
        if again is not None:
            pending.appendleft(again)
        return rows

    def _recycle_due(self, worker: _Worker) -> bool:
        limit = self.settings.max_tasks_per_worker
        return bool(limit) and worker.tasks >= limit

    def _enforce_limits(self) -> Iterator[list[Result]]:
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.case is not None and now - worker.started > self.settings.timeout:
                message = f"Timeout: no result after {self.settings.timeout:g} s"
                yield from self._replace(worker, self._rows(worker, Status.TIMEOUT, message))
            elif worker.case is not None and self._over_memory(worker):
                limit = _format_bytes(self.settings.max_memory or 0)
                message = f"OutOfMemory: worker went over --max-memory {limit}"
                yield from self._replace(worker, self._rows(worker, Status.OOM, message))
            elif not worker.ready and now - worker.spawned > START_TIMEOUT:
                raise PoolError(f"worker {worker.name} did not start within {START_TIMEOUT:g} s")

    def _over_memory(self, worker: _Worker) -> bool:
        limit = self.settings.max_memory
        now = time.monotonic()
        if not limit or now - worker.memory_checked < MEMORY_POLL_SECONDS:
            return False
        worker.memory_checked = now
        if worker.footprint is None:
            worker.footprint = _Footprint(worker.process.pid)
        return worker.footprint.resident_bytes(now) > limit

    def _replace(self, worker: _Worker, final: list[Result] | None) -> Iterator[list[Result]]:
        """Kill `worker`, yield what it had for its model type plus `final`, start a new one."""
        _kill(worker)
        index = self._workers.index(worker)
        if final is not None:
            yield [*worker.progress.results, *final]
        self._workers[index] = self._spawn()

    def _death_row(self, worker: _Worker) -> list[Result] | None:
        code = worker.process.exitcode
        if code is not None and code < 0:
            how = f"killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        if worker.case is None:
            # It died outside any model type: while starting (a broken environment) or idle.
            self._failed_starts += 0 if worker.ready else 1
            if self._failed_starts >= MAX_FAILED_STARTS:
                raise PoolError(f"workers keep dying before they are ready ({how})")
            return None
        fault = self._executor_fault(worker)
        if fault:
            return self._rows(worker, Status.AUDITOR_ERROR,
                              f"ExecutorError: worker process {how}: {fault}; not the model's doing")
        return self._rows(worker, Status.CRASH, f"Crash: worker process {how}")

    def _executor_fault(self, worker: _Worker) -> str:
        """Why a worker's death is the auditor's own failure rather than its model type's, or "".
        A worker that ran the pickle check's Ray round trip is a driver of the sweep's Ray cluster,
        and Ray ends a driver whose cluster died: a death then, with the cluster gone, is the
        executor's (an `auditor-error`), never the model's `crash`."""
        checks = self.options.checks
        if not self.options.ray_cluster or "pickle" not in checks:
            return ""
        joined = worker.tasks > 0 or (worker.progress.check in checks
                                      and checks.index(worker.progress.check) >= checks.index("pickle"))
        if not joined:
            return ""
        from auditor.remote.ray_trip import cluster_gone

        return cluster_gone(self.options.ray_cluster)

    def _rows(self, worker: _Worker, status: Status, message: str) -> list[Result]:
        assert worker.case is not None
        return death_rows(worker.case, self.options, worker.progress, status, message,
                          seconds=time.monotonic() - worker.started, worker=worker.name)


def _kill(worker: _Worker) -> None:
    """Terminate the worker's process group, then kill it if it lingers."""
    pid = worker.process.pid
    if pid is None:
        return
    for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        worker.process.join(grace)
        if not worker.process.is_alive():
            break
    try:
        os.killpg(pid, signal.SIGKILL)  # children it left behind
    except (ProcessLookupError, PermissionError):
        pass
    worker.conn.close()
    from auditor.remote.workspace import remove_workdir_of

    remove_workdir_of(pid)  # its scratch files: twins, modules caches (it had no time to clean up)


class _Footprint:
    """A process's resident memory plus that of its descendants, found again every
    CHILDREN_SECONDS; a process gone in between simply stops counting."""

    def __init__(self, pid: int | None) -> None:
        import psutil

        try:
            self._root = psutil.Process(pid)
        except psutil.Error:
            self._root = None
        self._children: list = []
        self._found = -CHILDREN_SECONDS

    def resident_bytes(self, now: float) -> int:
        import psutil

        if self._root is None:
            return 0
        if now - self._found >= CHILDREN_SECONDS:
            self._found = now
            try:
                self._children = self._root.children(recursive=True)
            except psutil.Error:
                return 0
        total = 0
        for process in (self._root, *self._children):
            try:
                total += process.memory_info().rss
            except psutil.Error:
                pass
        return total


def _format_bytes(count: int) -> str:
    return f"{count / 2**30:.1f} GiB"
