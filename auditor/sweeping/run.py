"""`auditor.sweep(...)`: build every selected model type in worker processes, one row each.

What `auditor sweep` does, as a function, in steps, each a module of its own: validate the
request into a plan (an `InputError` otherwise, before any work), select the model types, read
what a resumed run has done, execute the checks in the local pool or on Ray, write each model
type's rows as one unit to results.jsonl as they come, then the tables, report.html and
summary.md (and the JUnit XML and Markdown files asked for), and gate on the `fail_on` rules.
A sweep that cannot go on raises `RunStopped`; Ctrl-C raises `RunInterrupted`; either way every
finished row is kept and the exception carries the command that resumes the run.

It prints nothing: what a person would want to see as it goes reaches `SweepEvents`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from auditor.core.errors import RunInterrupted, RunStopped
from auditor.core.results import RESULTS_FILE
from auditor.sweeping import execute, resume
from auditor.sweeping.events import SweepEvents, SweepOutcome
from auditor.sweeping.options import SweepRequest, command_line, make_request
from auditor.sweeping.plan import SweepPlan
from auditor.sweeping.select import select
from auditor.sweeping.tables import Tables, extra_files
from auditor.sweeping.validate import WORKER_LOG, validate
from auditor.sweeping.write import INTERRUPTED, write_rows


def sweep(output: str | os.PathLike | None = None, *, events: SweepEvents | None = None,
          fail_on: Iterable[str] = (), expected=None, **options) -> SweepOutcome:
    """Run a sweep and write its files; see `SweepRequest` for the options.

    `fail_on` takes `--fail-on` rules (`refused`, `decorate/*/legacy=refused`); the cells they
    match are `SweepOutcome.gate_hits`, but for the failures the expected baseline `expected` (a
    file, or a Baseline) lists. Raises InputError on bad input (before any work), RunStopped when
    the run could not go on, RunInterrupted on Ctrl-C."""
    from auditor.report.baseline import read_baseline
    from auditor.report.gate import parse_fail_on

    request = make_request(output=output, **options)
    rules = parse_fail_on(fail_on)
    return run_request(request, events or SweepEvents(), rules, read_baseline(expected))


def run_request(request: SweepRequest, events: SweepEvents, rules: tuple = (), expected=None) -> SweepOutcome:
    """The steps of a sweep, in order; the executor starts before the selection, so that its
    workers import torch and transformers while the parent discovers the model types. The
    engines of `--engine` run from a layer above (auditor.environments.engine_sweeps, which makes
    their venvs): a request naming them is refused here."""
    if request.engines:
        from auditor.core.errors import InputError

        raise InputError("--engine needs its venvs made: use auditor.sweep() or "
                         "auditor.environments.engine_sweeps.run_sweep, not sweeping.run_request")
    plan = validate(request)
    _prepare(plan, events)
    start = time.monotonic()
    with execute.executor(plan, events) as executor:
        selected = select(plan, events)
        info = resume.header(plan)
        for note in resume.engine_notes(info):
            events.note(note)
        path = plan.outdir / RESULTS_FILE
        resumed = plan.request.resume and path.exists()
        already = resume.already_done(path, info, events) if resumed else set()
        todo = [case for case in selected if case.model_type not in already]
        if not resumed:  # a new run (or --overwrite): a new log; --resume appends to the old one
            (plan.outdir / WORKER_LOG).unlink(missing_ok=True)
        tables = Tables(plan.outdir, expected, plan.against)
        done, stopped = write_rows(executor, todo, path, info, tables, plan, events, append=resumed,
                                   selected=selected)
    return _finish(plan, tables, (done, len(todo), stopped), time.monotonic() - start, (rules, expected))


def _prepare(plan: SweepPlan, events: SweepEvents) -> None:
    """Offline unless --online, and the scratch directories of killed auditors removed."""
    from auditor.remote.workspace import remove_orphaned_workdirs

    if not plan.request.online:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
    orphans = remove_orphaned_workdirs()
    if orphans:
        events.note(f"Removed {len(orphans)} scratch director{'y' if len(orphans) == 1 else 'ies'} left in "
                    f"{Path(orphans[0]).parent} by auditor processes that were killed.")


def _finish(plan: SweepPlan, tables: Tables, progress: tuple[int, int, str], seconds: float,
            gating: tuple) -> SweepOutcome:
    """The tables and the gate, once the executor is closed; RunStopped or RunInterrupted, with
    every finished row kept, when the run did not finish (`progress`: done, to do, why stopped)."""
    done, total, stopped = progress
    rules, expected = gating
    path = plan.outdir / RESULTS_FILE
    run, files = None, ()
    try:
        run, files = tables.finish()
        files += tuple(extra_files((run,), plan.request.junit, plan.request.markdown, expected, tables.previous))
    except OSError as exc:
        stopped = stopped or f"cannot write the tables and report in {plan.outdir}: {exc.strerror or exc}"
    kept = dict(results_path=path, done=done, total=total, run=run,
                resume_command=command_line(plan.request, plan.outdir, resume=True))
    if stopped == INTERRUPTED:
        raise RunInterrupted(f"interrupted: {done} of {total} model types finished", **kept)
    if stopped:
        raise RunStopped(stopped, **kept)
    return SweepOutcome(run=run, outdir=plan.outdir, files=files, done=done, total=total,
                        seconds=seconds, gate_hits=_gate(run, rules, expected), earlier=tables.earlier)


def _gate(run, rules: tuple, expected) -> tuple:
    """The gate step: the cells the `fail_on` rules match, but for those the baseline expects."""
    if not rules:
        return ()
    from auditor.report.baseline import expected_matrix
    from auditor.report.gate import gate_hits

    return gate_hits(expected_matrix([run], expected), rules)
