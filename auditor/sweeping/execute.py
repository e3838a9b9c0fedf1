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
    address that cannot be reached is an InputError, before any row."""
    from auditor.executors.pool import PoolError

    with _ray_for_pickle(plan, events) as options:
        try:
            made = _executor(plan, options)
        except PoolError as exc:
            raise InputError(str(exc)) from None
        yield made


@contextlib.contextmanager
def _ray_for_pickle(plan: SweepPlan, events: SweepEvents):
    """The options, with the one local Ray cluster that the pool's workers share for the pickle
    check's Ray round trip (rather than a cluster per worker). It starts while the workers
    start; a cluster that does not start is reported in every Ray row, and the other checks go
    on. Under --executor ray the tasks use the sweep's own cluster; without Ray installed the
    column is skipped."""
    from auditor.remote.ray_trip import LocalCluster, ray_missing

    if "pickle" not in plan.options.checks or plan.request.executor != "local" or ray_missing():
        yield plan.options
        return
    events.note("Starting a local Ray cluster for the pickle check's Ray round trip...")
    cluster = LocalCluster(cpus=plan.request.jobs)
    try:
        yield replace(plan.options, ray_cluster=cluster.start())
    finally:
        cluster.close()


def _executor(plan: SweepPlan, options):
    if plan.request.executor == "local":
        from auditor.executors.pool import WorkerPool

        return WorkerPool(plan.settings, options)
    from auditor.executors.ray_executor import RayExecutor, RaySettings

    settings = plan.settings
    ray_settings = RaySettings(address=plan.request.ray_address, jobs=settings.jobs, timeout=settings.timeout,
                               plugins=settings.plugins, gpus_per_task=plan.request.gpus_per_task,
                               online=plan.request.online)
    return RayExecutor(ray_settings, options).connect()
