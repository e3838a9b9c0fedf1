"""`auditor upgrade-check --from A --to B`: the same sweep under two transformers, then their diff.

A and B are releases (5.17.0) or local wheels, sdists or source trees. Each side runs in its own
virtual environment, the nox sessions upgrade_check(base) and upgrade_check(new) of the project's
noxfile, reused from run to run (torch is $AUDITOR_TORCH, default 2.13.0). Both sides are installed
before either sweeps. OUTDIR gets base/ and new/ (each a run directory with its own report), the
two side by side (report.html, results.csv, matrix.csv), and their diff (diff.md, diff.html).

Exit codes as `auditor diff`: 0; 1 on regressions the --allow file does not excuse; 2 on bad
input, or a side that could not be installed or swept; 130 interrupted (rerun with --resume).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from auditor.cli import EXIT_INTERRUPTED, EXIT_OK, UsageError, read_results
from auditor.cli.sweep import DEFAULT_CHECKS, DEFAULT_POLICIES
from auditor.core.hints import NOX_HINT
from auditor.core.results import RESULTS_FILE
from auditor.upgrade.plan import (
    UpgradePlan,
    UpgradeSpecError,
    default_outdir,
    installed_mismatch,
    parse_transformers,
    plan_upgrade,
    sweep_flags,
)

NOXFILE = Path(__file__).resolve().parents[2] / "noxfile.py"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("upgrade-check", help="sweep two transformers in their own venvs and diff them",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="base", required=True, metavar="VERSION_OR_PATH",
                   help="the transformers in use: a release, or a local wheel, sdist or source tree")
    p.add_argument("--to", dest="new", required=True, metavar="VERSION_OR_PATH",
                   help="the transformers to upgrade to")
    sweep = p.add_argument_group("sweep options, the same for both sides (defaults: the sweep's)")
    sweep.add_argument("--models", action="append", default=[], metavar="A,B,...",
                       help="model types or regular expressions to audit")
    sweep.add_argument("--exclude", action="append", default=[], metavar="A,B,...",
                       help="model types or regular expressions to leave out")
    sweep.add_argument("--checks", help="comma-separated checks")
    sweep.add_argument("--policies", help="comma-separated decorator policies")
    sweep.add_argument("--jobs", "-j", type=int, help="worker processes per side")
    sweep.add_argument("--timeout", type=float, help="seconds per model type")
    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, metavar="OUTDIR",
                     help="where base/, new/ and the diff go (default: reports/upgrade-FROM-to-TO)")
    out.add_argument("--allow", type=Path, metavar="FILE", help="regressions to accept, as for `auditor diff`")
    out.add_argument("--fail-on", action="append", default=[], choices=("drift",),
                     help="also exit 1 when a default config drifted, as for `auditor diff`")
    out.add_argument("--resume", action="store_true", help="continue the sweeps already in OUTDIR")
    out.add_argument("--overwrite", action="store_true", help="replace the sweeps already in OUTDIR")
    out.add_argument("--dry-run", action="store_true", help="print the nox commands and stop")
    p.set_defaults(handler=run_upgrade_check)


def run_upgrade_check(args: argparse.Namespace) -> int:
    plan = _plan(args)
    if args.dry_run:
        print("\n".join(step.shell() for step in plan.steps))
        return EXIT_OK
    _check_output(plan, args)
    try:
        with _venv_lock(NOXFILE.parent / ".nox" / "upgrade_check.lock"):
            for step in plan.steps:
                print(f"auditor upgrade-check: {step.describe()}", file=sys.stderr, flush=True)
                code = subprocess.run(step.argv, env={**os.environ, **step.env}, stdout=_stderr_fd(),
                                      check=False).returncode
                if code:
                    raise UsageError(f"could not {step.describe()}: nox exited {code}; its log is above")
    except KeyboardInterrupt:
        print(f"\nInterrupted; finished rows are kept in {plan.outdir}. Continue with the same command "
              "and --resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _compare(plan, args.allow, args.fail_on)


def _plan(args: argparse.Namespace) -> UpgradePlan:
    """Everything that can be wrong with the command line, found before any venv is touched."""
    from auditor.checks import available

    check_limits(args)
    # Both sides get the checks and policies explicitly: they run this checkout, and a default
    # that changes between the two sweeps would make their columns differ.
    checks = args.checks if args.checks is not None else DEFAULT_CHECKS
    policies = args.policies if args.policies is not None else DEFAULT_POLICIES
    unknown = [c.strip() for c in checks.split(",") if c.strip() and c.strip() not in available()]
    if unknown or not checks.strip(", "):
        raise UsageError(f"unknown check(s) {', '.join(unknown) or '(none given)'}; "
                         f"available: {', '.join(available())}")
    if importlib.util.find_spec("nox") is None:
        raise UsageError(f"upgrade-check runs nox: {NOX_HINT}")
    if not NOXFILE.is_file():
        raise UsageError(f"upgrade-check needs the project's noxfile, not found at {NOXFILE}: "
                         "run it from a checkout of model-sweep-auditor")
    if args.allow is not None:
        _read_allow_list(args.allow)
    cwd = Path.cwd()
    try:
        base, new = parse_transformers(args.base, cwd), parse_transformers(args.new, cwd)
        outdir = cwd / (args.output if args.output is not None else default_outdir(base, new))
        plan = plan_upgrade(
            base, new, outdir=outdir, noxfile=NOXFILE, nox=(sys.executable, "-m", "nox"),
            sweep=sweep_flags(models=args.models, exclude=args.exclude, checks=checks,
                              policies=policies, jobs=args.jobs, timeout=args.timeout),
            resume=args.resume,
        )
    except UpgradeSpecError as exc:
        raise UsageError(str(exc)) from None
    return plan


def check_limits(args: argparse.Namespace) -> None:
    """The options of the sweeps a command runs in venvs (upgrade-check, versions), checked
    before any venv is touched."""
    if args.resume and args.overwrite:
        raise UsageError("--resume and --overwrite contradict each other")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")


def _read_allow_list(path: Path) -> None:
    from auditor.report.diff import AllowListError, parse_allow_list

    try:
        parse_allow_list(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise UsageError(f"cannot read allow list {path}: {exc.strerror or exc}") from None
    except AllowListError as exc:
        raise UsageError(str(exc)) from None


def _check_output(plan: UpgradePlan, args: argparse.Namespace) -> None:
    for side in plan.sides:
        try:
            side.outdir.mkdir(parents=True, exist_ok=True)
            probe = side.outdir / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise UsageError(f"cannot write to {side.outdir}: {exc.strerror or exc}") from None
        if (side.outdir / RESULTS_FILE).exists() and not (args.resume or args.overwrite):
            raise UsageError(f"{side.outdir / RESULTS_FILE} exists; pass --resume to continue it "
                             "or --overwrite to replace it")


def _compare(plan: UpgradePlan, allow: Path | None, fail_on: list[str]) -> int:
    from auditor.cli.diff import run_diff
    from auditor.report import write_report

    runs = []
    for side in plan.sides:
        run = read_results(side.outdir, f"the {side.name} side left no readable results: ")
        mismatch = installed_mismatch(side, run.info.transformers)
        if mismatch:
            raise UsageError(f"{mismatch} (results of an earlier run? rerun with --overwrite)")
        runs.append(run)
    try:
        merged = write_report(runs, plan.outdir)
    except OSError as exc:
        raise UsageError(f"cannot write to {plan.outdir}: {exc.strerror or exc}") from None
    code = run_diff(argparse.Namespace(base=plan.base.outdir, new=plan.new.outdir, allow=allow, output=plan.outdir,
                                       junit=None, fail_on=fail_on))
    print("\n".join(f"wrote {p}" for p in merged))
    for side in plan.sides:
        print(f"{side.name}: {side.outdir / 'report.html'}")
    return code


@contextlib.contextmanager
def _venv_lock(path: Path) -> Iterator[None]:
    """Upgrade-checks of one checkout share its two venvs: the second waits rather than install
    into them while the first sweeps."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"auditor upgrade-check: waiting for another auditor command that installs into this checkout's venvs ({path})",
                  file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _stderr_fd() -> int | None:
    """nox's own output goes to stderr, so that stdout holds only the verdict."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
