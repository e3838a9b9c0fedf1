"""The execute step: the executor that runs the plan's checks, the local pool or Ray tasks."""

from __future__ import annotations

import contextlib
from dataclasses import replace

from auditor.core.errors import InputError
from auditor.sweeping.events import SweepEvents
from auditor.sweeping.plan import SweepPlan


@contextlib.contextmanager
def executor(plan: SweepPlan, events: SweepEvents):
    """The executor of the plan, ready to `run(cases)` (one batch of rows per model type); a Ray
    address that cannot be reached is an InputError, before any row. Entered before the model
    types are selected: the local pool's workers start at once and import torch and transformers
    while the parent discovers; the pickle check's Ray cluster starts at the first `run`, so a
    refused selection has started nothing but those workers."""
    from auditor.executors.pool import PoolError

    with _ray_for_pickle(plan, events) as (options, launch):
        try:
            made = _executor(plan, options)
        except PoolError as exc:
            raise InputError(str(exc)) from None
        try:
            yield _LaunchFirst(made, launch) if launch else made
        finally:
            made.close()  # the workers of a run that never came (a refused selection, Ctrl-C)


class _LaunchFirst:
    """An executor that calls `launch` before the first cases it runs (the Ray cluster, which
    the workers spawned earlier wait for)."""

    def __init__(self, inner, launch) -> None:
        self._inner, self._launch = inner, launch

    def run(self, cases):
        if cases and self._launch is not None:
            self._launch()
            self._launch = None
        return self._inner.run(cases)

    def close(self) -> None:
        self._inner.close()


@contextlib.contextmanager
def _ray_for_pickle(plan: SweepPlan, events: SweepEvents):
    """The options, with the one local Ray cluster that the pool's workers share for the pickle
    check's Ray round trip (rather than a cluster per worker), and the function that starts it
    (None: nothing to start). It starts while the workers run their first checks; a cluster that
    does not start is reported in every Ray row, and the other checks go on. Under
    --executor ray the tasks use the sweep's own cluster; without Ray installed the column is
    skipped."""
    from auditor.remote.ray_trip import LocalCluster, ray_missing

    if "pickle" not in plan.options.checks or plan.request.executor != "local" or ray_missing():
        yield plan.options, None
        return
    cluster = LocalCluster(cpus=plan.request.jobs)

    def launch() -> None:
        events.note("Starting a local Ray cluster for the pickle check's Ray round trip...")
        cluster.launch()

    try:
        yield replace(plan.options, ray_cluster=cluster.reserve()), launch
    finally:
        cluster.close()


def _executor(plan: SweepPlan, options):
    if plan.request.executor == "local":
        from auditor.executors.pool import WorkerPool

        pool = WorkerPool(plan.settings, options)
        pool.start()
        return pool
    from auditor.executors.ray_executor import RayExecutor, RaySettings

    settings = plan.settings
    ray_settings = RaySettings(address=plan.request.ray_address, jobs=settings.jobs, timeout=settings.timeout,
                               plugins=settings.plugins, gpus_per_task=plan.request.gpus_per_task,
                               online=plan.request.online)
    return RayExecutor(ray_settings, options).connect()
