"""What runs inside a worker, for both executors: import once, then run checks on model types
one by one, sending the messages of `protocol.py`.

`main` is a pool worker process; a Ray task (`ray_executor.sweep_case`) calls `prepare` and
`run_case` the same way, so the two differ only in how the messages travel.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence

from auditor.checks import CaseContext, Check, Options
from auditor.core import heap
from auditor.core.classifier import classify, sticky_device_error
from auditor.core.messages import message_of
from auditor.core.results import Result
from auditor.executors import protocol
from auditor.models.cases import ModelCase


def main(conn, name: str, plugins: Sequence[str], options: Options, log_file: str = "") -> None:
    """Entry point of a worker process (started with multiprocessing's spawn).

    `log_file`: where its stdout and stderr go (appended), and those of the processes it
    starts: transformers' warnings, and the Python traceback of a crash (faulthandler).
    """
    os.setpgrp()  # the pool kills our whole process group on timeout
    if log_file:
        _write_output_to(log_file, name)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    selected = prepare(plugins, options)
    # Only a pool worker starts its checks' helpers (a receiver, say): it lives for many model
    # types, and the start must not be charged to the first one's --timeout.
    for check in selected:
        check.start(options)
    # What is loaded now lives as long as the worker: out of the garbage collector's sight, it
    # is not scanned again by every full collection that a model type's build triggers.
    heap.settle()
    conn.send(protocol.ready(os.getpid()))
    while True:
        task = conn.recv()
        if task is None:
            return
        case, only = task
        retired = False
        for message in run_case(case, selected, options, worker=name, only=only):
            conn.send(message)
            retired = retired or message[0] == protocol.MessageKind.RETIRE.value
        if retired:  # its device can run nothing more: the pool starts a fresh worker once this one is gone
            return


def prepare(plugins: Sequence[str], options: Options) -> list[Check]:
    """A worker's start-up: torch and transformers imported once, up front (what a long-lived
    worker amortizes), the plugins loaded, the selected checks resolved, and each engine whose
    own code the sweep runs warmed up (auditor.engines.warm_up: vLLM's import, process group and
    registry cache). All of it before the first model type's clock starts (the pool's when the
    worker says it is ready, Ray's at `started`), so that a type's --timeout measures its own
    work, alone on the machine or not. A warm-up that fails is written to the worker's log and
    left for the rows that need it."""
    import sys

    import torch  # noqa: F401
    import transformers  # noqa: F401
    import transformers.models.auto.modeling_auto  # noqa: F401  (what every build goes through: seconds)

    from auditor import checks, engines
    from auditor.models import cases

    cases.load_plugins(plugins)
    selected = [checks.get(name) for name in options.checks]
    for engine, why in engines.warm_up(options.checks, options.policies).items():
        print(f"auditor: {engine}'s warm-up failed, left for its rows: {why}", file=sys.stderr, flush=True)
    return selected


def _write_output_to(log_file: str, name: str) -> None:
    """Point file descriptors 1 and 2 at `log_file`, so that C code, child processes and Python
    alike write there, and dump a traceback there if the process is killed by a fault."""
    import faulthandler
    import sys

    fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout.flush()
    print(f"--- worker {name} (pid {os.getpid()}) started {time.strftime('%Y-%m-%d %H:%M:%S')}", file=sys.stderr,
          flush=True)
    faulthandler.enable(file=sys.stderr)


def run_case(case: ModelCase, selected: Sequence[Check], options: Options, worker: str = "",
             only: Sequence[str] = ()) -> Iterator[tuple]:
    """Run the selected checks (those named in `only`, when given) on one model type; yields the
    messages for the driver.

    A row that carries a sticky device error (auditor.core.classifier.sticky_device_error) ends the
    type here: its row stands, the checks after it are left unrun, and the worker retires (a
    `retire` message before `done`). Otherwise, when a check ran models on a device, the device is
    probed (`device_fault`); a probe that fails retires the worker too, and every row of the type
    ran in a context found broken. PyTorch's test harness does the same after a failure
    (synchronize, stop the process when that raises): a device-side assert leaves a CUDA context
    in which every later kernel fails, and a worker that went on would record that failure as
    every later type's."""
    import torch

    dtype = torch.get_default_dtype()
    context = CaseContext(case, options)
    names = [check.name for check in selected if not only or check.name in only]
    broken, ran = "", 0
    try:
        for check in selected:
            if check.name not in names:
                continue
            ran += 1
            yield protocol.check_started(check.name)
            for result in run_check(check, case, context):
                yield protocol.row(_stamped(result, worker))
                broken = broken or (result.message if sticky_device_error(result.message) else "")
            if broken:
                break
    finally:
        del context
        torch.set_default_dtype(dtype)  # no state may leak into the next model type
    if broken:
        yield protocol.retire(protocol.Retirement(broken, unrun=tuple(names[ran:])))
    elif any(check.runs_models for check in selected if check.name in names):
        fault = device_fault(options.device)
        if fault:
            yield protocol.retire(protocol.Retirement(fault, rerun_all=True))
    yield protocol.done(case.model_type)
    heap.settle()  # the next type's collections skip what this one imported


def device_fault(device: str) -> str:
    """Why this process can run nothing more on `device`, or "": one small module's forward there
    (an allocation, a kernel, and the hooks a model's layers go through) read back to the host,
    which waits for every kernel queued before it, as the `torch.cuda.synchronize()` of PyTorch's
    harness does after a failure: an error an earlier kernel left pending on CUDA surfaces here, at
    the type that left it, rather than in the next type's first kernel. The same code on every
    device; nothing to probe on meta."""
    import torch

    if device == "meta":
        return ""
    try:
        probe = torch.nn.Linear(1, 1, device=device)
        probe(torch.ones(1, 1, device=device)).sum().item()
    except Exception as exc:  # whatever it is, the device is not fit for another type
        return message_of(exc)
    return ""


def run_check(check: Check, case: ModelCase, context: CaseContext) -> Iterator[Result]:
    """The check's results; if it raises, one row with the exception's status instead."""
    start = time.perf_counter()
    try:
        yield from check.run(case, context)
    except Exception as exc:
        failure = classify(exc)
        yield Result.failed(case.model_type, check.name, failure, seconds=time.perf_counter() - start)


def _stamped(result: Result, worker: str) -> Result:
    from dataclasses import replace

    return replace(result, worker=worker) if worker else result
