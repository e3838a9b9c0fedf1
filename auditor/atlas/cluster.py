"""The atlas's runs on a Ray cluster: each (transformers, engine releases, Python) run is one task.

With `--executor ray`, every planned run that the atlas lacks goes to a node with room, as one Ray
task (`sweep_on_node`): the node makes the run's environment itself, with auditor.environments'
own steps (a venv per release under the node's venv home, `releases/RELEASE/`, made with uv
when it is there and reused by every later run of that release on that node), sweeps there with
the local pool, and sends the run folder's files back. The caller writes them into DIR/runs/ and
puts the run into the database in one transaction, as each task finishes; several runs are in
flight at once, as many as the cluster has room for (`--jobs` CPUs each).

So a row is computed where its header says: the header is written by the sweep in the run's own
venv, on the node, and the caller refuses a run whose header is not the planned one (another
transformers, Python or engine release). A node lost mid-run loses that run only: Ray runs the
task again once, on a node still there; a run whose retry fails too is reported at the end, the
others are in. A run is only ever added whole, so a grid interrupted (or failed) and called again
sweeps only what is missing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from auditor.atlas.plan import WHAT, AtlasPlan, PlannedRun
from auditor.core.errors import InputError, RunInterrupted
from auditor.core.results import Run
from auditor.sweeping.sides import SideSweep

POLL_SECONDS = 1.0
LOG_TAIL = 4000  # characters of a failed step's output in the error
STALE_SECONDS = 24 * 3600  # a node's run folder left that long ago is a killed run's


@dataclass(frozen=True)
class RunOrder:
    """What a node needs to make one run: small and plain, for the trip to the node."""

    release: str
    python: str  # the Python minor of the run's venv (the planned key's)
    engines: tuple[str, ...]  # --engine requirements, "vllm==0.34.0"
    sweep: SideSweep  # the run's sweep (its selection, checks, jobs, timeout), the local pool's
    cpus: int
    slug: str  # the run folder's name


class NodeRunError(RuntimeError):
    """A node could not make or sweep its run (the step's output tail in the message)."""


def order_of(planned: PlannedRun, plan: AtlasPlan) -> RunOrder:
    cpus = max(1, int(plan.sweep.jobs or 1))
    sweep = dataclasses.replace(plan.sweep, jobs=cpus, executor=None, ray_address=None)
    return RunOrder(planned.release, planned.key.python, tuple(plan.engines), sweep, cpus, planned.key.slug)


def sweep_on_cluster(todo: list[PlannedRun], plan: AtlasPlan, events) -> Iterator[tuple[PlannedRun, Run, float]]:
    """(planned run, its run read back, seconds) as each run's task finishes on the cluster; an
    InputError at the end naming the runs that failed (the others are yielded, so kept)."""
    import ray

    _connect(plan)
    remote = ray.remote(sweep_on_node)
    refs: dict[object, tuple[PlannedRun, float]] = {}
    failed: list[str] = []
    try:
        for planned in todo:
            order = order_of(planned, plan)
            # max_retries: a task whose worker or node died runs once more, on a node still there.
            ref = remote.options(num_cpus=order.cpus, max_retries=1, retry_exceptions=False).remote(order)
            refs[ref] = (planned, time.monotonic())
            events.sweeping(planned)
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                planned, since = refs.pop(ref)
                try:
                    files = ray.get(ref)
                except Exception as exc:  # the node's step failed, or the node died twice
                    failed.append(f"transformers {planned.release}: {_why(exc)}")
                    continue
                yield planned, _received(planned, files, events), time.monotonic() - since
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=plan.directory) from None
    finally:
        for ref in refs:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        ray.shutdown()
    if failed:
        raise InputError("runs that did not finish on the cluster (the others are in the atlas; the same command "
                         "sweeps only what is missing): " + "; ".join(failed))


def _connect(plan: AtlasPlan) -> None:
    """Join the cluster at --ray-address, or start one on this machine of --jobs CPUs (per run: 1)."""
    import ray

    from auditor.remote.ray_trip import LOOPBACK_SYSTEM_CONFIG, check_reachable, loopback_only

    address = plan.sweep.ray_address
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    common = dict(log_to_driver=False, logging_level=logging.ERROR, runtime_env={"env_vars": offline})
    try:
        if address:
            check_reachable(address)
            ray.init(address=address, **common)
        else:
            loopback_only()
            ray.init(address="local", num_cpus=max(1, int(plan.sweep.jobs or os.cpu_count() or 1)),
                     include_dashboard=False, _node_ip_address="127.0.0.1", object_store_memory=100 * 2**20,
                     _system_config=LOOPBACK_SYSTEM_CONFIG, **common)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError, TimeoutError...
        where = f"at {address}" if address else "on this machine"
        raise InputError(f"cannot reach a Ray cluster {where}: {exc}") from None


def _why(exc: BaseException) -> str:
    import ray

    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(exc.cause, NodeRunError):
        return str(exc.cause)
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"


def _received(planned: PlannedRun, files: dict[str, bytes], events) -> Run:
    """The run's files written into its folder here, read back, and refused where its header is
    not the planned run's environment."""
    from auditor.atlas.keys import key_of
    from auditor.core.results import RESULTS_FILE
    from auditor.environments import runner

    if RESULTS_FILE not in files:
        raise InputError(f"the run of transformers {planned.release} came back without {RESULTS_FILE}")
    runner.prepare_outdir(planned.outdir, resume=False, overwrite=True)
    for name, data in files.items():
        (planned.outdir / name).write_bytes(data)
    run = runner.read_side(planned.outdir, f"the run of transformers {planned.release} sent back ", events)
    found, wanted = key_of(run.info), planned.key
    differs = [f"{name} {getattr(found, name) or '-'} (planned: {getattr(wanted, name) or '-'})"
               for name in ("transformers", "python", "engines") if getattr(found, name) != getattr(wanted, name)]
    if differs:
        raise InputError(f"the run of transformers {planned.release} ran in another environment than planned: "
                         f"{'; '.join(differs)}; it is not added")
    return run


# -- what runs on the node ---------------------------------------------------------------

def sweep_on_node(order: RunOrder) -> dict[str, bytes]:
    """A Ray task: make the run's venv on this node (or reuse it), sweep there, and return the run
    folder's files (name -> bytes). A failed step raises NodeRunError with its output's tail."""
    from auditor.environments import runner
    from auditor.environments.steps import parse_transformers
    from auditor.environments.venvs import RELEASES_ENVDIR, release_steps

    setup = runner.side_setup(WHAT, order.engines)
    env = {**dict(setup.env), "AUDITOR_SIDE_PYTHON": order.python}
    # With an engine, its own policy too (as `sweep --engine`).
    swept = dataclasses.replace(order.sweep, policies=runner.engine_policies(setup, order.sweep.policies))
    work = Path(tempfile.mkdtemp(prefix="run-", dir=_work_home()))
    try:
        outdir = work / order.slug
        install, sweep = release_steps(parse_transformers(order.release, work), outdir=outdir,
                                       envdir=setup.home / RELEASES_ENVDIR / order.release, noxfile=runner.NOXFILE,
                                       nox=setup.nox, sweep=swept, label="", env=env)
        # One run at a time in a release's venv on this node (a second waits for the first).
        with runner.venv_lock(f"{RELEASES_ENVDIR}-{order.release}", runner.SideEvents()):
            for step in (install, sweep):
                _run(step, work / "steps.log")
        return {path.name: path.read_bytes() for path in outdir.iterdir() if path.is_file()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _work_home() -> Path:
    """Where a node's runs are swept before they are sent back: its temporary folder's
    auditor-atlas/, rid of what a run killed with its worker left there over a day ago."""
    home = Path(tempfile.gettempdir()) / "auditor-atlas"
    home.mkdir(exist_ok=True)
    for left in home.iterdir():
        with contextlib.suppress(OSError):
            if time.time() - left.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(left, ignore_errors=True)
    return home


def _run(step, log: Path) -> None:
    from auditor.environments import runner

    code = runner.run_step_logged(step, log)
    if code:
        tail = log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
        raise NodeRunError(runner.step_failed(step, code, where=f" on {_node()}", log=tail))


def _node() -> str:
    import socket

    return socket.gethostname()
