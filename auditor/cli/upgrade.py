"""`auditor upgrade-check --from A --to B`: the same sweep under two transformers, then their diff.

A and B are releases (5.17.0) or local wheels, sdists or source trees. Each side runs in its own
virtual environment, the nox sessions upgrade_check(base) and upgrade_check(new) of the project's
noxfile, reused from run to run (torch is $AUDITOR_TORCH, default 2.13.0). A release the package
index does not have is refused before anything is installed; both sides are installed before
either sweeps. OUTDIR gets base/ and new/ (each a run directory with its own report), the
two side by side (report.html, results.csv, matrix.csv), and their diff (diff.md, diff.html).

Exit codes as `auditor diff`: 0; 1 on regressions the --allow file does not excuse; 2 on bad
input, or a side that could not be installed or swept; 130 interrupted (rerun with --resume).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import auditor.engines as engines
from auditor.cli import EXIT_INTERRUPTED, EXIT_OK
from auditor.cli.releases import (
    PrintedEvents,
    add_engine_argument,
    add_fail_on_drift_argument,
    add_fail_on_engine_argument,
    print_dry_run,
)
from auditor.core.errors import InputError
from auditor.sweeping.options import add_side_arguments
from auditor.sweeping.sides import side_sweep_of
from auditor.upgrade.check import WHAT, plan_check, run_check

# The sweep options both sides get, as the sweep declares them.
SIDE_OPTIONS = ("models", "exclude", "checkpoints", "checks", "policies", "jobs", "timeout")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("upgrade-check", help="sweep two transformers in their own venvs and diff them",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="base", required=True, metavar="VERSION_OR_PATH",
                   help="the transformers in use: a release, or a local wheel, sdist or source tree")
    p.add_argument("--to", dest="new", metavar="VERSION_OR_PATH",
                   help="the transformers to upgrade to (default with --to-engine: the --from one)")
    sweep = p.add_argument_group("sweep options, the same for both sides (defaults: the sweep's)")
    add_side_arguments(sweep, SIDE_OPTIONS)
    add_engine_argument(sweep, force=True)
    sweep.add_argument("--to-engine", dest="to_engines", action="append", default=[], metavar="NAME==VERSION",
                       help="an engine upgrade: the new side gets this release in place of --engine's of that "
                            f"name, e.g. --engine {engines.example_requirement(back=1)} --to-engine "
                            f"{engines.example_requirement()} (with one transformers: "
                            "--to defaults to --from); the diff lists the engine verdicts that change")
    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, metavar="OUTDIR",
                     help="where base/, new/ and the diff go (default: reports/upgrade-FROM-to-TO)")
    out.add_argument("--allow", type=Path, metavar="FILE", help="regressions to accept, as for `auditor diff`")
    add_fail_on_drift_argument(out)
    add_fail_on_engine_argument(out)
    out.add_argument("--resume", action="store_true", help="continue the sweeps already in OUTDIR")
    out.add_argument("--overwrite", action="store_true", help="replace the sweeps already in OUTDIR")
    out.add_argument("--dry-run", action="store_true", help="print the nox commands and stop")
    p.set_defaults(handler=run_upgrade_check)


def run_upgrade_check(args: argparse.Namespace) -> int:
    if args.new is None and not args.to_engines:
        raise InputError("upgrade-check needs --to (or --to-engine, for an engine upgrade)")
    plan = plan_check(args.base, args.new if args.new is not None else args.base,
                      side_sweep_of(args, SIDE_OPTIONS), output=args.output, allow=args.allow,
                      resume=args.resume, overwrite=args.overwrite, engines=args.engines, to_engines=args.to_engines,
                      force=args.force_transformers)
    if args.dry_run:
        print_dry_run(plan.steps)
        return EXIT_OK
    try:
        outcome = run_check(plan, PrintedEvents(WHAT), resume=args.resume, overwrite=args.overwrite)
    except KeyboardInterrupt:
        print(f"\nInterrupted; finished rows are kept in {plan.outdir}. Continue with the same command "
              "and --resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    from auditor.cli.diff import run_diff

    code = run_diff(argparse.Namespace(base=plan.base.outdir, new=plan.new.outdir, allow=args.allow,
                                       output=plan.outdir, junit=None, fail_on_drift=args.fail_on_drift, expected=None,
                                       fail_on_engines=args.fail_on_engines))
    print("\n".join(f"wrote {p}" for p in outcome.written))
    for side in plan.sides:
        print(f"{side.name}: {side.outdir / 'report.html'}")
    return code
