"""The real-release commands of tests/upgrade, started in the background as the session begins.

test_bisect_real, test_upgrade_real and test_wheel_install each run one real command that
installs transformers releases from the package index into the checkout's side venvs and sweeps
one to three model types there: minutes spent mostly on installs and on one interpreter at a
time. Each such command is a job (`@job(FIXTURE)`, the fixture its test reads its result through);
when collection ends, `start` runs the jobs the selected tests use in a background thread, one
after another (they share the side venvs and their lock), so that they run beside the rest of
the suite instead of after it. The test then waits for its job's result and asserts on it as it
would on a command it ran itself; a job that calls pytest.skip skips its test. Their tests'
durations show only the wait, so each job's own seconds are kept (`seconds`), and the session's
summary prints them.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

_JOBS: dict[str, Callable[[Path], object]] = {}
_FUTURES: dict[str, Future] = {}
_STATE: dict[str, object] = {}
_SECONDS: dict[str, float] = {}


def job(fixture: str) -> Callable:
    """Register `function(workdir)` as the job whose result the fixture `fixture` gives."""
    def register(function: Callable[[Path], object]) -> Callable[[Path], object]:
        _JOBS[fixture] = function
        return function

    return register


def start(items: Iterable) -> None:
    """Start, in order, the jobs whose fixtures the selected test items use."""
    items = list(items)
    names = [name for name in _JOBS if any(name in getattr(item, "fixturenames", ()) for item in items)]
    if not names:
        return
    root = Path(tempfile.mkdtemp(prefix="auditor-early-"))
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="auditor-early")
    _STATE.update(root=root, pool=pool)
    for name in names:
        _FUTURES[name] = pool.submit(_timed, name, root / name)


def _timed(name: str, workdir: Path):
    begun = time.perf_counter()
    try:
        return _JOBS[name](workdir)
    finally:
        _SECONDS[name] = time.perf_counter() - begun


def seconds() -> dict[str, float]:
    """Each background job that ran: how long its command took (wall seconds), in start order."""
    return {name: _SECONDS[name] for name in _FUTURES if name in _SECONDS}


def result(name: str):
    """The job's result, once it has finished (run here and now if it was not started)."""
    future = _FUTURES.get(name)
    if future is None:
        return _JOBS[name](Path(tempfile.mkdtemp(prefix=f"auditor-{name}-")))
    return future.result()


def stop() -> None:
    """Wait for a job still running (its command's own timeout bounds it), drop those not begun."""
    pool = _STATE.pop("pool", None)
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    root = _STATE.pop("root", None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
