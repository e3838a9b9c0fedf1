"""`auditor sweep`: build every selected model type in worker processes, one row each.

A thin layer over `auditor.api.sweeps`: the options become a SweepRequest, its events print.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys

from auditor.api.sweeps import DEFAULT_CHECKS as _CHECKS
from auditor.api.sweeps import DEFAULT_POLICIES as _POLICIES
from auditor.api.sweeps import SweepEvents, SweepRequest, make_request, run_request
from auditor.cli import EXIT_FAILED, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK
from auditor.cli.progress import ProgressDisplay
from auditor.core.errors import RunInterrupted, RunStopped
from auditor.sweeping.options import add_arguments, values_of

# The defaults as the command line spells them (upgrade-check and bisect pass them to their sides).
DEFAULT_CHECKS = ",".join(_CHECKS)
DEFAULT_POLICIES = ",".join(_POLICIES)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run the checks on every selected model type",
                              description=__doc__)
    add_arguments(p)
    p.set_defaults(handler=run_sweep)


def run_sweep(args: argparse.Namespace) -> int:
    # Python leaves SIGINT ignored when the shell started us that way (a background job); Ctrl-C
    # must always stop the pool cleanly and keep the rows, so take it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from auditor.report.baseline import read_baseline
    from auditor.report.files import REPORT_FILES
    from auditor.report.gate import describe_hits, parse_fail_on

    rules = parse_fail_on(args.fail_on)
    expected = read_baseline(args.expected)
    events = _PrintedEvents()
    request = request_of(args)
    try:
        outcome = run_request(request, events, rules, expected, _engine_events() if request.engines else None)
    except RunInterrupted as stop:
        print(f"\nInterrupted: {stop.done} of {stop.total} model types finished; every finished "
              f"row is in {stop.results_path}.\nResume with: {stop.resume_command}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunStopped as stop:
        print(f"\nauditor: the sweep stopped: {stop}\n{stop.done} of {stop.total} model types finished; "
              f"every finished row is in {stop.results_path}.\nResume with: {stop.resume_command}",
              file=sys.stderr)
        return EXIT_FAILED
    _print_verdicts((outcome.run, *outcome.engine_runs))
    _print_since(outcome, request)
    print(f"Done: {outcome.done} model type{'s' if outcome.done != 1 else ''} in {events.elapsed():.0f} s."
          if outcome.total else "Done: nothing to do.", file=sys.stderr)
    _print_findings(outcome.run, expected)
    _print_missing(outcome.run)
    print(f"Results in {outcome.outdir}/ ({', '.join(REPORT_FILES)})", file=sys.stderr)
    for run in outcome.engine_runs:
        print(f"{run.info.environment}: its own run in {run.path.parent}/ (the report above holds it beside this one)",
              file=sys.stderr)
    for extra in outcome.files[len(REPORT_FILES):]:
        print(f"Wrote {extra}", file=sys.stderr)
    if outcome.worker_log is not None:
        print(f"Workers' own output (transformers warnings, crash tracebacks): {outcome.worker_log}", file=sys.stderr)
    if outcome.gate_hits:
        print(f"auditor: {describe_hits(outcome.gate_hits)}", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_OK


def request_of(args: argparse.Namespace) -> SweepRequest:
    """The SweepRequest of the command line."""
    return make_request(**values_of(args), command=shlex.join(["auditor", *sys.argv[1:]]))


class _PrintedEvents(SweepEvents):
    """The sweep's notes on stderr, and its progress (a bar on a terminal, lines in a CI log)."""

    def __init__(self) -> None:
        self.progress: ProgressDisplay | None = None

    def note(self, text: str) -> None:
        print(text, file=sys.stderr)

    def started(self, total: int) -> None:
        self.progress = ProgressDisplay(total)

    def finished_type(self, model_type: str, rows) -> None:
        self.progress.update(model_type, rows)

    def ended(self) -> None:
        if self.progress is not None:
            self.progress.close()

    def elapsed(self) -> float:
        return self.progress.elapsed() if self.progress is not None else 0.0


def _print_findings(run, expected) -> None:
    """What the whole run found, per column: the lines that head report.html (from the run the
    tables were just made of, not read again), the failures the expected baseline lists apart."""
    from auditor.report.baseline import expected_matrix
    from auditor.report.summary import findings, tally

    matrix = expected_matrix([run], expected)
    for finding in findings(matrix):
        print(f"  {finding.text()}", file=sys.stderr)
    print(tally(matrix).text(), file=sys.stderr)


def _print_missing(run) -> None:
    """One line naming the types this environment could not audit for want of a package, and the
    command that installs it (the README's install leaves pillow, timm and torchaudio out)."""
    from auditor.report.dependencies import missing

    found = missing(run.results)
    if found is not None:
        print(found.text(), file=sys.stderr)


def _engine_events():
    from auditor.cli.releases import PrintedEvents
    from auditor.environments.engine_sweeps import WHAT

    return PrintedEvents(WHAT)


def _print_verdicts(runs) -> None:
    """The end summary opens with each engine's verdict line (the one that heads summary.md and
    report.html; serve.csv has every type's verdict), one per environment (an --engine's venv)."""
    from auditor.report.serve import headlines, verdicts

    found = headlines(verdicts(list(runs)))
    for headline in found:
        print(f"{headline.environment}: {headline.text}" if len(found) > 1 else headline.text, file=sys.stderr)


SINCE_SHOWN = 5  # new findings the end summary lists; report.html has more, `auditor diff` all


def _print_since(outcome, request: SweepRequest) -> None:
    """What changed since the previous run of this selection (report.html's "Since" section,
    shortened; auditor.report.changes has the one count): the environment's changes, a line per
    engine, the first new findings, each with its cause, whose fault it is, and the command that
    sweeps it again. One line saying why when there is no run to compare with."""
    from auditor.report.changes import text_lines
    from auditor.report.since import since

    earlier = outcome.earlier
    for name, why in earlier.unreadable if earlier is not None else ():
        print(f"auditor: warning: not comparing with {name}: {why}", file=sys.stderr)
    changes = since([outcome.run], outcome.previous)
    if changes is None:
        if earlier is not None and earlier.why:
            print(f"Since the last run: nothing to compare with: {earlier.why}", file=sys.stderr)
        return
    for line in text_lines(changes, SINCE_SHOWN):
        print(line, file=sys.stderr)
    if len(changes.new_findings) > SINCE_SHOWN or changes.fixed or changes.flaky:
        print(f"  every change: see {outcome.outdir / 'report.html'}", file=sys.stderr)


def reproduce_command(request: SweepRequest, model_type: str, column: str) -> str:
    """`auditor sweep --models TYPE --checks CHECK ...`: the sweep of one cell's model type and
    check (auditor.core.repro, the one builder), with the options of `request` that change what a
    cell means (auditor.sweeping.resume.repeat_flags)."""
    from auditor.core.repro import sweep_command
    from auditor.sweeping.resume import repeat_flags

    return sweep_command(model_type, column, repeat_flags(request))
