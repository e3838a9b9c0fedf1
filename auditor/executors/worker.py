"""What runs inside a worker process: import once, then run checks on model types one by one.

A worker talks to the pool only through its pipe, in structured messages:
`("ready", pid)`, then per model type `("check", name)` before each check,
`("result", dict)` for each result and `("done", model_type)` at the end.
Nothing is ever read from its stdout, so a model that prints cannot corrupt a result.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence

from auditor.checks import CaseContext, Check, Options
from auditor.core import heap
from auditor.core.results import Result
from auditor.core.status import classify
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
    import torch  # noqa: F401  (import once, up front: this is what the pool amortizes)
    import transformers  # noqa: F401

    from auditor import checks
    from auditor.models import cases

    cases.load_plugins(plugins)
    selected = [checks.get(check) for check in options.checks]
    for check in selected:
        check.start(options)
    # What is loaded now lives as long as the worker: out of the garbage collector's sight, it
    # is not scanned again by every full collection that a model type's build triggers.
    heap.settle()
    conn.send(("ready", os.getpid()))
    while True:
        case = conn.recv()
        if case is None:
            return
        for message in run_case(case, selected, options, worker=name):
            conn.send(message)
        heap.settle()  # the next type's collections skip what this one imported


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


def run_case(case: ModelCase, selected: Sequence[Check], options: Options, worker: str = "") -> Iterator[tuple]:
    """Run every selected check on one model type; yields the messages for the pool."""
    import torch

    dtype = torch.get_default_dtype()
    context = CaseContext(case, options)
    try:
        for check in selected:
            yield ("check", check.name)
            for result in run_check(check, case, context):
                yield ("result", _stamped(result, worker).to_json())
    finally:
        del context
        torch.set_default_dtype(dtype)  # no state may leak into the next model type
    yield ("done", case.model_type)


def run_check(check: Check, case: ModelCase, context: CaseContext) -> Iterator[Result]:
    """The check's results; if it raises, one row with the exception's status instead."""
    start = time.perf_counter()
    try:
        yield from check.run(case, context)
    except Exception as exc:
        failure = classify(exc)
        yield Result(case.model_type, check.name, failure.status, message=failure.message,
                     signature=failure.signature, seconds=time.perf_counter() - start)


def _stamped(result: Result, worker: str) -> Result:
    from dataclasses import replace

    return replace(result, worker=worker) if worker else result
