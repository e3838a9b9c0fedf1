"""`auditor versions RELEASES`: the same sweep under several transformers releases, in one matrix.

RELEASES is a list (5.20.0,5.22.0,5.24.0) or a specifier ('>=5.20,<5.25') resolved against the
package index (final releases, patch releases included). Each release is installed into its own
reused venv (.nox/releases/RELEASE/, upgrade-check's nox session), every release before any
sweeps, then each is swept into OUTDIR/RELEASE/ (default OUTDIR: reports/versions-FIRST-to-LAST).
OUTDIR then gets one report with a column group per release (report.html, results.csv,
matrix.csv, summary.md) and, per model type and column, the lowest and highest release where it
passes: minmax.csv and minmax.html (the min/max table of a model registry).

--executor ray and --shard I/N go to every release's sweep, as `auditor sweep` takes them. With
--shard, each release's slice goes to OUTDIR/RELEASE/shard-I-of-N/; copy the jobs' OUTDIRs into
one and run `auditor versions --merge -o OUTDIR` for the report of the whole selection.

Exit codes: 0; 2 bad input (found before any install), or a release that could not be installed
or swept; 130 interrupted (rerun with --resume).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.cli import EXIT_INTERRUPTED, EXIT_OK, UsageError
from auditor.cli.releases import PrintedEvents, add_engine_argument, print_dry_run
from auditor.sweeping.options import add_side_arguments
from auditor.sweeping.sides import side_sweep_of
from auditor.upgrade import versions as versions_run
from auditor.upgrade.versions import WHAT, VersionsReport

# The sweep options every release's sweep gets, as the sweep declares them.
SIDE_OPTIONS = ("models", "exclude", "checks", "policies", "jobs", "timeout", "executor", "ray_address", "shard")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("versions", help="sweep a list or range of transformers releases into one matrix",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("releases", nargs="?", metavar="RELEASES", help="5.20.0,5.22.0 or a specifier such as '>=5.20,<5.25'")
    sweep = p.add_argument_group("sweep options, the same for every release (defaults: the sweep's)")
    add_side_arguments(sweep, SIDE_OPTIONS)
    add_engine_argument(sweep)
    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, metavar="OUTDIR", help="default: reports/versions-FIRST-to-LAST")
    out.add_argument("--resume", action="store_true", help="continue the sweeps already in OUTDIR")
    out.add_argument("--overwrite", action="store_true", help="replace the sweeps already in OUTDIR")
    out.add_argument("--merge", action="store_true",
                     help="sweep nothing: the report and min/max table of every run under OUTDIR (shards of other jobs)")
    out.add_argument("--dry-run", action="store_true", help="print the nox commands and stop")
    p.set_defaults(handler=run_versions)


def run_versions(args: argparse.Namespace) -> int:
    events = PrintedEvents(WHAT)
    if args.merge:
        if args.releases or args.output is None:
            raise UsageError("--merge takes no RELEASES, and -o OUTDIR: the directory holding the runs")
        return _print_report(versions_run.merge_versions(Path.cwd() / args.output, events))
    plan = versions_run.plan_versions(args.releases, side_sweep_of(args, SIDE_OPTIONS),
                                      output=args.output, resume=args.resume, overwrite=args.overwrite,
                                      engines=args.engines)
    if args.dry_run:
        print_dry_run(plan.steps)
        return EXIT_OK
    try:
        report = versions_run.run_versions(plan, events, resume=args.resume, overwrite=args.overwrite)
    except KeyboardInterrupt:
        print(f"\nInterrupted; finished rows are kept in {plan.outdir}. Continue with the same command and --resume.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return _print_report(report)


def _print_report(report: VersionsReport) -> int:
    ranges = report.ranges
    never = sum(1 for r in ranges if not r.lowest)
    print(f"{len(report.releases)} releases ({', '.join(report.releases)}), {len(ranges)} cells; "
          f"{never} pass in none of them, {sum(1 for r in ranges if r.not_passing)} fail between two that pass")
    print("\n".join(f"wrote {p}" for p in report.written))
    return EXIT_OK
