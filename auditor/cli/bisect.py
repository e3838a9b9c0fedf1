"""`auditor bisect MODEL [COLUMN] --good A --bad B`: the first transformers release where a cell changes.

The releases from A to B (the package index's, patch releases included) are installed one at a
time into one reused venv (upgrade-check's new side, .nox/upgrade_check-new/), each sweeping only MODEL
with only the check and policy COLUMN needs (every default check and policy without COLUMN: any
cell of the type). Both ends are swept first; then the middle release between the newest one
like A and the oldest one unlike it, until they are neighbours. A release that will not install
or sweep is skipped, as `git bisect skip` does. OUTDIR (default reports/bisect-MODEL-A-to-B) gets
one run directory per release tried.

With --repo PATH, A and B are git refs of a local transformers checkout, and the search is over
its commits: `git bisect run` drives `auditor bisect-step` (below) and the first bad commit is
named with its subject. The checkout must be clean; it is left where it was.

`auditor bisect-step MODEL [COLUMN] --repo PATH --good-status STATUS` (or --good-results DIR)
is one step for your own `git bisect run`: it installs the checkout as it is, sweeps the cell,
and exits 0 when its status is the good one, 1 when it differs, 125 when it cannot be measured
(install or sweep failed), 128 on bad input (which stops `git bisect run`).

Exit codes of `auditor bisect`: 0 the release or commit was found (or narrowed to a few that
could not be measured); 2 bad input, found before any release between the ends is installed
(an unknown release, a cell the same at both ends, a dirty checkout) or an end that cannot be
installed; 3 `git bisect run` stopped without an answer; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from auditor.cli.releases import PrintedEvents, add_engine_argument
from auditor.core.errors import InputError
from auditor.sweeping.options import add_side_arguments
from auditor.sweeping.sides import side_sweep_of
from auditor.upgrade.bisect_run import (
    STEP_OPTIONS,
    WHAT,
    Probe,
    bisect_commits,
    bisect_probe,
    bisect_releases,
    bisect_step,
)
from auditor.upgrade.bisection import GIT_ABORT, BisectTarget, State, changed_columns

# bisect-step's own paragraph of the docstring: its --help (and the reference) do not repeat bisect's
STEP_DOC = next(part for part in __doc__.split("\n\n") if part.startswith("`auditor bisect-step"))


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bisect", help="the first transformers release (or commit) where a cell changes",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _cell_arguments(p)
    p.add_argument("--good", required=True, metavar="RELEASE_OR_REF", help="where the cell is as it was")
    p.add_argument("--bad", required=True, metavar="RELEASE_OR_REF", help="where it has changed")
    p.add_argument("--repo", type=Path, metavar="PATH",
                   help="bisect the commits of this transformers git checkout instead of releases")
    p.add_argument("--output", "-o", type=Path, metavar="OUTDIR",
                   help="one run directory per release or commit tried (default: reports/bisect-MODEL-GOOD-to-BAD)")
    p.set_defaults(handler=run_bisect)

    s = subparsers.add_parser("bisect-step", help="one `git bisect run` step: exit 0/1/125 by a cell's status",
                              description=STEP_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    _cell_arguments(s)
    s.add_argument("--repo", type=Path, required=True, metavar="PATH", help="the transformers checkout being bisected")
    good = s.add_mutually_exclusive_group(required=True)
    good.add_argument("--good-status", metavar="STATUS",
                      help="the COLUMN's status on good commits, e.g. build (or `absent`)")
    good.add_argument("--good-results", type=Path, metavar="DIR", help="a run of a good commit (its results.jsonl)")
    s.add_argument("--output", "-o", type=Path, metavar="DIR",
                   help="where the step's run directory goes, one per commit (default: reports/bisect-steps)")
    s.set_defaults(handler=run_bisect_step)


def _cell_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_type", metavar="MODEL", help="the model type, e.g. llama")
    p.add_argument("column", metavar="COLUMN", nargs="?", default="",
                   help="the matrix column, e.g. decorate/decoder/legacy (default: any cell of the type)")
    add_side_arguments(p.add_argument_group("the sweep of each step (defaults: the sweep's; --checks and "
                                            "--policies only without COLUMN)"),
                       STEP_OPTIONS, jobs=1)
    add_engine_argument(p, force=True)


def _probe(args: argparse.Namespace, outdir: Path) -> Probe:
    """The cell and its sweep, checked before anything is installed."""
    return bisect_probe(args.model_type, args.column, side_sweep_of(args, STEP_OPTIONS), outdir=outdir,
                        engines=args.engines, force=args.force_transformers)


def run_bisect(args: argparse.Namespace) -> int:
    default = Path("reports") / f"bisect-{args.model_type}-{args.good}-to-{args.bad}".replace("/", "_")
    probe = _probe(args, Path.cwd() / (args.output or default))
    events = PrintedEvents(WHAT)
    try:
        if args.repo is not None:
            return _print_commits(probe, bisect_commits(probe, args.repo, args.good, args.bad, events), args)
        return _print_releases(probe, bisect_releases(probe, args.good, args.bad, events))
    except KeyboardInterrupt:
        print(f"\nInterrupted; the runs so far are in {probe.outdir}.", file=sys.stderr)
        return EXIT_INTERRUPTED


def _print_releases(probe: Probe, found) -> int:
    outcome, states, span = found.outcome, found.states, found.span
    if outcome.found:
        print(f"{probe.cell}: first changed in transformers {outcome.first_bad}")
    else:
        print(f"{probe.cell}: changed in one of transformers {', '.join(outcome.candidates)} "
              "(those before the last could not be installed or swept)")
    _print_states(probe.cell, (outcome.last_good, states[outcome.last_good]),
                  (outcome.first_bad, states[outcome.first_bad]))
    skipped = found.skipped
    print(f"{len(states)} releases installed (the 2 ends and {_steps(len(states) - 2)}) of the "
          f"{len(span) - 1} after {span[0]} up to {span[-1]}"
          + (f"; could not be measured: {', '.join(skipped)}" if skipped else ""))
    print(f"runs in {probe.outdir}/")
    return EXIT_OK


def _print_commits(probe: Probe, found, args: argparse.Namespace) -> int:
    if found.commit is None:
        if found.only_skipped:
            print(f"{probe.cell}: changed in one of the commits git lists above (the others could not "
                  "be installed or swept)")
            return EXIT_OK
        print(f"{probe.cell}: git bisect run stopped without naming a first bad commit (exit "
              f"{found.git_exit}); its log is above", file=sys.stderr)
        return EXIT_FAILED
    print(f"{probe.cell}: first bad commit {found.commit} {found.subject}")
    _print_states(probe.cell, (args.good, found.good), (args.bad, found.bad))
    print(f"{found.tried + 2} checkouts installed (the 2 ends and {_steps(found.tried)}) of the {found.commits} "
          f"commits after {args.good} up to {args.bad}")
    print(f"runs in {probe.outdir}/")
    return EXIT_OK


def _steps(count: int) -> str:
    return f"{count} bisection step{'' if count == 1 else 's'}"


def _print_states(cell: BisectTarget, *named: tuple[str, State]) -> None:
    columns = changed_columns(named[0][1], named[-1][1]) if not cell.column else None
    for name, state in named:
        print(f"  {name}: {state.describe(columns)}")


def run_bisect_step(args: argparse.Namespace) -> int:
    """One step of `git bisect run`; bad input exits 128, so that git stops instead of calling it bad."""
    try:
        probe = _probe(args, Path.cwd() / (args.output or Path("reports") / "bisect-steps"))
        step = bisect_step(probe, args.repo, good_results=args.good_results, good_status=args.good_status,
                           events=PrintedEvents(WHAT))
    except InputError as exc:
        print(f"auditor: error: {exc}", file=sys.stderr)
        return GIT_ABORT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    seen = "could not be measured" if step.state is None else step.state.describe()
    print(f"auditor bisect-step: {step.head[:12]} {probe.cell}: {seen} -> "
          f"{ {0: 'good', 1: 'bad', 125: 'skip'}[step.verdict] }", file=sys.stderr)
    return step.verdict
