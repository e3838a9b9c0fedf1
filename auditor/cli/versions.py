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

from auditor.cli import EXIT_INTERRUPTED, EXIT_OK, UsageError, read_results
from auditor.cli.releases import NOX, index_releases, require_nox, run_step, venv_lock
from auditor.cli.upgrade import NOXFILE, check_limits
from auditor.core.results import RESULTS_FILE
from auditor.report.ranges import ranges_csv, ranges_html, release_ranges
from auditor.upgrade.plan import installed_mismatch, parse_transformers, sweep_flags
from auditor.upgrade.releases import ReleaseError, resolve_releases
from auditor.upgrade.venvs import RELEASES_ENVDIR, release_steps

WHAT = "versions"
RANGE_FILES = ("minmax.csv", "minmax.html")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("versions", help="sweep a list or range of transformers releases into one matrix",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("releases", nargs="?", metavar="RELEASES", help="5.20.0,5.22.0 or a specifier such as '>=5.20,<5.25'")
    sweep = p.add_argument_group("sweep options, the same for every release (defaults: the sweep's)")
    sweep.add_argument("--models", action="append", default=[], metavar="A,B,...", help="model types or regular expressions")
    sweep.add_argument("--exclude", action="append", default=[], metavar="A,B,...", help="model types to leave out")
    sweep.add_argument("--checks", help="comma-separated checks")
    sweep.add_argument("--policies", help="comma-separated decorator policies")
    sweep.add_argument("--jobs", "-j", type=int, help="worker processes per sweep")
    sweep.add_argument("--timeout", type=float, help="seconds per model type")
    sweep.add_argument("--executor", choices=("local", "ray"), help="as `auditor sweep --executor`")
    sweep.add_argument("--ray-address", metavar="HOST:PORT", help="as `auditor sweep --ray-address`")
    sweep.add_argument("--shard", metavar="I/N", help="sweep only the I-th of N slices of the selection")
    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, metavar="OUTDIR", help="default: reports/versions-FIRST-to-LAST")
    out.add_argument("--resume", action="store_true", help="continue the sweeps already in OUTDIR")
    out.add_argument("--overwrite", action="store_true", help="replace the sweeps already in OUTDIR")
    out.add_argument("--merge", action="store_true",
                     help="sweep nothing: the report and min/max table of every run under OUTDIR (shards of other jobs)")
    out.add_argument("--dry-run", action="store_true", help="print the nox commands and stop")
    p.set_defaults(handler=run_versions)


def run_versions(args: argparse.Namespace) -> int:
    if args.merge:
        if args.releases or args.output is None:
            raise UsageError("--merge takes no RELEASES, and -o OUTDIR: the directory holding the runs")
        return _merge(Path.cwd() / args.output)
    steps, outdir = _plan(args)
    if args.dry_run:
        print("\n".join(step.shell() for step in steps))
        return EXIT_OK
    try:
        with venv_lock(WHAT):
            for step in steps:
                if run_step(step, WHAT):
                    raise UsageError(f"could not {step.describe()}; nox's log is above")
    except KeyboardInterrupt:
        print(f"\nInterrupted; finished rows are kept in {outdir}. Continue with the same command and --resume.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    for step in steps[len(steps) // 2:]:
        run = read_results(step.side.outdir, f"the sweep of {step.side.name} left no readable results: ")
        mismatch = installed_mismatch(step.side, run.info.transformers)
        if mismatch:
            raise UsageError(f"{mismatch} (results of an earlier run? rerun with --overwrite)")
    return _merge(outdir)


def _plan(args: argparse.Namespace):
    """Every step, installs first; everything that can be wrong found before any venv is touched."""
    from auditor.checks import available
    from auditor.models.cases import SelectionError, parse_shard

    if not args.releases:
        raise UsageError("name the releases: a list such as 5.20.0,5.22.0 or a specifier such as '>=5.20,<5.25'")
    check_limits(args)
    if args.ray_address and args.executor != "ray":
        raise UsageError("--ray-address needs --executor ray")
    shard = ""
    if args.shard:
        try:
            index, count = parse_shard(args.shard)
        except SelectionError as exc:
            raise UsageError(str(exc)) from None
        shard = f"shard-{index}-of-{count}"
    if args.checks is not None:
        unknown = [c.strip() for c in args.checks.split(",") if c.strip() and c.strip() not in available()]
        if unknown or not args.checks.strip(", "):
            raise UsageError(f"unknown check(s) {', '.join(unknown) or '(none given)'}; "
                             f"available: {', '.join(available())}")
    require_nox(WHAT)
    try:
        releases = resolve_releases(args.releases, index_releases())
    except ReleaseError as exc:
        raise UsageError(str(exc)) from None
    cwd = Path.cwd()
    outdir = cwd / (args.output or Path("reports") / f"versions-{releases[0]}-to-{releases[-1]}")
    sweep = sweep_flags(models=args.models, exclude=args.exclude, checks=args.checks, policies=args.policies,
                        jobs=args.jobs, timeout=args.timeout, executor=args.executor or None,
                        ray_address=args.ray_address or None, shard=args.shard or None)
    pairs = [release_steps(parse_transformers(r, cwd), outdir=outdir / r / shard if shard else outdir / r,
                           envdir=NOXFILE.parent / RELEASES_ENVDIR / r, noxfile=NOXFILE, nox=NOX, sweep=sweep,
                           label=f"transformers {r}", resume=args.resume,
                           extras="[ray]" if args.executor == "ray" else "")
             for r in releases]
    if not args.dry_run:
        for _, sweep_step in pairs:
            _check_output(sweep_step.side.outdir, args)
    return [install for install, _ in pairs] + [run for _, run in pairs], outdir


def _check_output(outdir: Path, args: argparse.Namespace) -> None:
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    if (outdir / RESULTS_FILE).exists() and not (args.resume or args.overwrite):
        raise UsageError(f"{outdir / RESULTS_FILE} exists; pass --resume to continue it or --overwrite to replace it")


def _merge(outdir: Path) -> int:
    """The report of every run under `outdir`, a column group per release, and the min/max table."""
    from packaging.version import InvalidVersion, Version

    from auditor.report import write_report

    paths = sorted(p.parent for p in outdir.glob(f"*/**/{RESULTS_FILE}"))
    if not paths:
        raise UsageError(f"no runs under {outdir}/*/ (each release's sweep has its own directory there)")
    runs = [read_results(path) for path in paths]
    try:
        runs.sort(key=lambda run: Version(run.info.transformers))
    except InvalidVersion:
        raise UsageError("a run under it used a transformers that is not a release: "
                         f"{', '.join(sorted({r.info.transformers for r in runs}))}") from None
    releases, ranges = release_ranges(runs, minimum=1)  # every transformers is a release: sorted above
    try:
        written = write_report(runs, outdir)
        for name, text in zip(RANGE_FILES, (ranges_csv(ranges), ranges_html(ranges, releases)), strict=True):
            (outdir / name).write_text(text, encoding="utf-8")
            written.append(outdir / name)
    except OSError as exc:
        raise UsageError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
    never = sum(1 for r in ranges if not r.lowest)
    print(f"{len(releases)} releases ({', '.join(releases)}), {len(ranges)} cells; "
          f"{never} pass in none of them, {sum(1 for r in ranges if r.not_passing)} fail between two that pass")
    print("\n".join(f"wrote {p}" for p in written))
    return EXIT_OK
