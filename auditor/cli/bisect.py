"""`auditor bisect MODEL [COLUMN] --good A --bad B`: the first transformers release where a cell changes.

The releases from A to B (the package index's, patch releases included) are installed one at a
time into one reused venv (.nox/bisect/, upgrade-check's nox session), each sweeping only MODEL
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
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from auditor.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError
from auditor.cli.releases import NOX, index_releases, read_cells, require_nox, run_step, venv_lock
from auditor.cli.upgrade import NOXFILE
from auditor.upgrade.bisect import (
    GIT_ABORT,
    BisectError,
    Cell,
    Entry,
    State,
    bounds,
    cell_state,
    changed_columns,
    check_ends,
    first_bad_commit,
    next_probe,
    parse_cell,
    step_verdict,
    sweep_selection,
)
from auditor.upgrade.plan import installed_mismatch, parse_transformers, sweep_flags
from auditor.upgrade.releases import ReleaseError, releases_between
from auditor.upgrade.venvs import BISECT_ENVDIR, only_type, release_steps

WHAT = "bisect"
# How `git bisect run` starts a step: this auditor, by the interpreter running it (a test seam).
STEP_COMMAND = (sys.executable, "-m", "auditor")


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
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.add_argument("--checks", help="the checks to sweep without COLUMN (default: the sweep's)")
    p.add_argument("--policies", help="the policies to sweep without COLUMN (default: the sweep's)")
    p.add_argument("--jobs", "-j", type=int, default=1, help="worker processes per sweep (default 1: one type)")
    p.add_argument("--timeout", type=float, help="seconds per sweep of the type")


@dataclass(frozen=True)
class _Probe:
    """How each release or commit is measured: the cell, the sweep options, where runs go."""

    cell: Cell
    sweep: tuple[str, ...]
    outdir: Path

    def measure(self, requirement: str, name: str, *, lock: bool = True) -> State | None:
        """The cell's state under this transformers; None when it could not be installed or swept."""
        spec = parse_transformers(requirement, Path.cwd())
        install, sweep = release_steps(spec, outdir=self.outdir / name, envdir=NOXFILE.parent / BISECT_ENVDIR,
                                       noxfile=NOXFILE, nox=NOX, sweep=self.sweep, label=f"transformers {name}",
                                       name=name)
        if run_step(install, WHAT) or run_step(sweep, WHAT):
            return None
        cells, run = read_cells(sweep.side.outdir, f"the sweep of {name} left no readable results: ")
        mismatch = installed_mismatch(sweep.side, run.info.transformers)
        if mismatch:
            raise UsageError(f"{mismatch}: the venv under {NOXFILE.parent / BISECT_ENVDIR} did not take the release")
        return cell_state(cells, self.cell)


def _probe(args: argparse.Namespace, outdir: Path) -> _Probe:
    """The cell and its sweep, checked before anything is installed."""
    from auditor.checks import available
    from auditor.cli.sweep import DEFAULT_CHECKS, DEFAULT_POLICIES

    try:
        cell = parse_cell(args.model_type, args.column)
    except BisectError as exc:
        raise UsageError(str(exc)) from None
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    check, policy = sweep_selection(cell, _is_policy)
    if cell.column and (args.checks or args.policies):
        raise UsageError("--checks and --policies are for any cell of a type; COLUMN already names its check")
    checks = check or args.checks or DEFAULT_CHECKS
    unknown = [c for c in checks.split(",") if c.strip() and c.strip() not in available()]
    if unknown:
        raise UsageError(f"unknown check(s) {', '.join(unknown)} (from {cell.column or '--checks'}); "
                         f"available: {', '.join(available())}")
    policies = policy or args.policies or (None if cell.column else DEFAULT_POLICIES)
    require_nox(WHAT)
    sweep = [*only_type(cell.model_type),
             *sweep_flags(checks=checks, policies=policies, jobs=args.jobs, timeout=args.timeout)]
    return _Probe(cell, tuple(sweep), outdir)


def _is_policy(name: str) -> bool:
    import auditor.engines  # noqa: F401  (registers the engines' policies)
    from auditor.decorators.policies import CHECK_POLICIES
    from auditor.decorators.registry import ALIASES

    return name in CHECK_POLICIES or name in ALIASES


def run_bisect(args: argparse.Namespace) -> int:
    default = Path("reports") / f"bisect-{args.model_type}-{args.good}-to-{args.bad}".replace("/", "_")
    probe = _probe(args, Path.cwd() / (args.output or default))
    try:
        if args.repo is not None:
            return _bisect_commits(args, probe)
        return _bisect_releases(args, probe)
    except KeyboardInterrupt:
        print(f"\nInterrupted; the runs so far are in {probe.outdir}.", file=sys.stderr)
        return EXIT_INTERRUPTED


def _bisect_releases(args: argparse.Namespace, probe: _Probe) -> int:
    try:
        span = releases_between(args.good, args.bad, index_releases())
    except ReleaseError as exc:
        raise UsageError(str(exc)) from None
    states: dict[str, State | None] = {}
    with venv_lock(WHAT):
        for end in (span[0], span[-1]):
            states[end] = probe.measure(end, end)
            if states[end] is None:
                raise UsageError(f"could not install or sweep transformers {end}, an end of the range; "
                                 "nox's log is above")
        try:
            check_ends(states[span[0]], states[span[-1]], probe.cell, span[0], span[-1])
        except BisectError as exc:
            raise UsageError(str(exc)) from None
        while (release := next_probe(span, states)) is not None:
            states[release] = probe.measure(release, release)
    outcome = bounds(span, states)
    good, bad = states[outcome.last_good], states[outcome.first_bad]
    if outcome.found:
        print(f"{probe.cell}: first changed in transformers {outcome.first_bad}")
    else:
        print(f"{probe.cell}: changed in one of transformers {', '.join(outcome.candidates)} "
              "(those before the last could not be installed or swept)")
    _print_states(probe.cell, (outcome.last_good, good), (outcome.first_bad, bad))
    skipped = sorted((r for r, s in states.items() if s is None), key=span.index)
    print(f"{len(states)} releases installed (the 2 ends and {_steps(len(states) - 2)}) of the "
          f"{len(span) - 1} after {span[0]} up to {span[-1]}"
          + (f"; could not be measured: {', '.join(skipped)}" if skipped else ""))
    print(f"runs in {probe.outdir}/")
    return EXIT_OK


def _steps(count: int) -> str:
    return f"{count} bisection step{'' if count == 1 else 's'}"


def _print_states(cell: Cell, *named: tuple[str, State]) -> None:
    columns = changed_columns(named[0][1], named[-1][1]) if not cell.column else None
    for name, state in named:
        print(f"  {name}: {state.describe(columns)}")


# -- commits of a local checkout, driven by `git bisect run` ------------------------------------------

def _git(repo: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True, check=False)
    if check and proc.returncode:
        raise UsageError(f"git {' '.join(argv)} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def _checked_repo(repo: Path, refs: tuple[str, ...], *, bisecting: bool = False) -> tuple[Path, list[str]]:
    """The checkout's top directory and the commits of `refs`: clean, mid-bisect only when
    `bisecting` (a step of `git bisect run`), refs known."""
    repo = repo.expanduser().resolve()
    if not repo.is_dir():
        raise UsageError(f"--repo {repo} is not a directory")
    top = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode:
        raise UsageError(f"--repo {repo} is not a git checkout")
    repo = Path(top.stdout.strip())
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    if dirty:
        raise UsageError(f"the checkout {repo} has uncommitted changes; commit or stash them first:\n{dirty}")
    if not bisecting and (repo / _git(repo, "rev-parse", "--git-path", "BISECT_START").stdout.strip()).exists():
        raise UsageError(f"a bisection is already under way in {repo}; end it with `git bisect reset`")
    commits = []
    for ref in refs:
        found = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if found.returncode:
            raise UsageError(f"{ref!r} is not a commit of {repo}")
        commits.append(found.stdout.strip())
    return repo, commits


def _bisect_commits(args: argparse.Namespace, probe: _Probe) -> int:
    repo, (good, bad) = _checked_repo(args.repo, (args.good, args.bad))
    if _git(repo, "merge-base", "--is-ancestor", good, bad, check=False).returncode:
        raise UsageError(f"--good {args.good} is not an ancestor of --bad {args.bad}")
    _git(repo, "bisect", "start")  # remembers where the checkout was, for the reset
    try:
        states = {}
        with venv_lock(WHAT):
            for name, commit in (("good", good), ("bad", bad)):
                _git(repo, "checkout", "--quiet", "--detach", commit)
                states[name] = probe.measure(str(repo), name)
                if states[name] is None:
                    raise UsageError(f"could not install or sweep the checkout at --{name} {commit[:12]}; "
                                     "nox's log is above")
        try:
            check_ends(states["good"], states["bad"], probe.cell, args.good, args.bad)
        except BisectError as exc:
            raise UsageError(str(exc)) from None
        _git(repo, "bisect", "bad", bad)
        _git(repo, "bisect", "good", good)
        step = [*STEP_COMMAND, "bisect-step", probe.cell.model_type,
                *([probe.cell.column] if probe.cell.column else []), "--repo", str(repo),
                "--good-results", str(probe.outdir / "good"), "--output", str(probe.outdir / "commits"),
                "--jobs", str(args.jobs), *(["--timeout", f"{args.timeout:g}"] if args.timeout else []),
                *(["--checks", args.checks] if args.checks else []),
                *(["--policies", args.policies] if args.policies else [])]
        run = subprocess.run(["git", "-C", str(repo), "bisect", "run", *step], stdout=subprocess.PIPE,
                             stderr=None, text=True, check=False)
        sys.stderr.write(run.stdout)
        log = _git(repo, "bisect", "log").stdout
    finally:
        reset = _git(repo, "bisect", "reset", check=False)
        if reset.returncode:
            print(f"auditor bisect: could not `git bisect reset` {repo} (do it by hand): "
                  f"{reset.stderr.strip() or reset.stdout.strip()}", file=sys.stderr)
    tried = sum(line.startswith(("git bisect good", "git bisect bad", "git bisect skip"))
                for line in log.splitlines()) - 2
    commit = first_bad_commit(run.stdout)
    if commit is None:
        if "only 'skip'ped commits left" in run.stdout:
            print(f"{probe.cell}: changed in one of the commits git lists above (the others could not "
                  "be installed or swept)")
            return EXIT_OK
        print(f"{probe.cell}: git bisect run stopped without naming a first bad commit (exit "
              f"{run.returncode}); its log is above", file=sys.stderr)
        return EXIT_FAILED
    subject = _git(repo, "log", "-1", "--format=%s", commit).stdout.strip()
    count = _git(repo, "rev-list", "--count", f"{good}..{bad}").stdout.strip()
    print(f"{probe.cell}: first bad commit {commit} {subject}")
    _print_states(probe.cell, (args.good, states["good"]), (args.bad, states["bad"]))
    print(f"{tried + 2} checkouts installed (the 2 ends and {_steps(tried)}) of the {count} "
          f"commits after {args.good} up to {args.bad}")
    print(f"runs in {probe.outdir}/")
    return EXIT_OK


def run_bisect_step(args: argparse.Namespace) -> int:
    """One step of `git bisect run`; bad input exits 128, so that git stops instead of calling it bad."""
    try:
        return _step(args)
    except UsageError as exc:
        print(f"auditor: error: {exc}", file=sys.stderr)
        return GIT_ABORT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _step(args: argparse.Namespace) -> int:
    probe = _probe(args, Path.cwd() / (args.output or Path("reports") / "bisect-steps"))
    repo, (head,) = _checked_repo(args.repo, ("HEAD",), bisecting=True)
    if args.good_results is not None:
        cells, _ = read_cells(args.good_results, "--good-results: ")
        good = cell_state(cells, probe.cell)
    elif not probe.cell.column:
        raise UsageError("--good-status needs COLUMN (for any cell of a type, give --good-results)")
    else:
        good = State(() if args.good_status == "absent" else (Entry(probe.cell.column, args.good_status),))
    with venv_lock(WHAT):
        state = probe.measure(str(repo), head[:12])
    verdict = step_verdict(good, state)
    seen = "could not be measured" if state is None else state.describe()
    print(f"auditor bisect-step: {head[:12]} {probe.cell}: {seen} -> "
          f"{ {0: 'good', 1: 'bad', 125: 'skip'}[verdict] }", file=sys.stderr)
    return verdict
