"""Running `bisect` and `bisect-step`: installing and sweeping transformers until a cell's change is found.

`bisect_probe` checks the cell and its sweep before anything is installed (InputError); then
`bisect_releases` walks the package index's releases from good to bad, or `bisect_commits` the
commits of a local checkout through `git bisect run`, whose steps are `bisect_step`. Each release
or commit tried is installed into one reused venv (upgrade-check's new side,
.nox/upgrade_check-new/, under its lock) and swept into a run directory of its own under the
probe's `outdir`. The search itself (which release next, what a state is)
is bisection.py's; nothing here prints.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.checks import across_releases
from auditor.core.errors import InputError, RunInterrupted
from auditor.environments import releases, runner
from auditor.environments.releases import ReleaseError
from auditor.environments.runner import SideEvents
from auditor.environments.steps import parse_transformers
from auditor.environments.venvs import release_steps
from auditor.sweeping import validate as rules
from auditor.sweeping.sides import SideSweep, side_sweep
from auditor.upgrade.bisection import (
    BisectError,
    BisectTarget,
    Bounds,
    Entry,
    State,
    bounds,
    cell_state,
    check_ends,
    first_bad_commit,
    next_probe,
    parse_cell,
    step_verdict,
    sweep_selection,
)
from auditor.upgrade.gitrepo import checked_repo, git
from auditor.upgrade.plan import WEIGHTS, with_weights

WHAT = "bisect"
# How `git bisect run` starts a step: this auditor, by the interpreter running it (a test seam).
STEP_COMMAND = (sys.executable, "-m", "auditor")
# bisect reuses upgrade-check's own new side (upgrade_check-new/, under the venv home) for every
# release it tries: the bisect that follows an upgrade-check only switches transformers.
BISECT_ENVDIR = Path(".")
# The options of a step's sweep that `bisect` and `bisect-step` take (the type comes from the cell).
STEP_OPTIONS = ("checks", "policies", "jobs", "timeout")


def only_type(model_type: str, sweep: SideSweep | None = None) -> SideSweep:
    """`sweep` selecting one model type, that sweeps to an empty run where the release lacks it
    (--allow-absent; `--models TYPE` alone would refuse the run instead)."""
    return dataclasses.replace(sweep or SideSweep(), models=(model_type,), allow_absent=True)


def cells_of(run):
    """(model type, column) -> the cell rule's verdict on each cell of one run (the matrix's)."""
    from auditor.report.matrix import run_verdicts

    return run_verdicts(run)


@dataclass(frozen=True)
class Probe:
    """How each release or commit is measured: the cell, its sweep's options, where runs go."""

    cell: BisectTarget
    sweep: SideSweep  # the sweep of each release or commit (its run directory and label aside)
    outdir: Path
    step_options: tuple[str, ...] = ()  # the same, as `auditor bisect-step` takes them
    setup: runner.SideSetup | None = None  # how the venv is made (None: made on first use, no engine)
    # Whether its sweep runs the weights check: the good end saves its checkpoint, the others load it.
    weights: bool = False

    def measure(self, requirement: str, name: str, events: SideEvents, *, saves: bool = False) -> State | None:
        """The cell's state under this transformers; None when it could not be installed or swept.
        `saves`: the good end, whose weights check saves the checkpoint every later step loads
        (probe.outdir/weights): a step's outputs are compared with the good release's."""
        spec = parse_transformers(requirement, Path.cwd())
        setup = self.setup or runner.side_setup(WHAT)
        envdir = setup.home / BISECT_ENVDIR
        swept = with_weights(self.sweep, (self.outdir / WEIGHTS).resolve(), saves=saves) if self.weights else self.sweep
        install, sweep = release_steps(spec, outdir=self.outdir / name, envdir=envdir, noxfile=runner.NOXFILE,
                                       nox=setup.nox, sweep=swept, label=setup.label(name), name=name, env=setup.env)
        for step in (install, sweep):
            code = runner.run_step(step, events)
            if code:  # this release says nothing: the bisection skips it (an end of it is refused)
                events.note(runner.step_failed(step, code))
                return None
        run = runner.read_swept(sweep.side, events, context=f"the sweep of {name} left no readable results: ",
                                hint=f": the venv under {envdir} did not take the release")
        state = cell_state(cells_of(run), self.cell)
        if state.flaky:  # a rerun passed: this release says neither good nor bad
            events.note(f"{name}: {state.describe()}: flaky, skipped")
            return None
        return state


def bisect_probe(model_type: str, column: str = "", sweep: SideSweep | None = None, *, outdir: Path,
                 engines: Sequence[str] = (), force: bool = False, **options) -> Probe:
    """The cell (COLUMN "" is any cell of the type) and the sweep that measures it, checked before
    anything is installed: an InputError when they cannot be bisected. `sweep` (a SideSweep), or
    its fields as keyword `options` (checks, policies, jobs: default 1, timeout), is each step's
    sweep. `engines` ("vllm==0.33.0") are installed with every release; without COLUMN the sweep
    then also runs their own functions."""
    from auditor.sweeping.options import BY_NAME, DEFAULT_CHECKS, DEFAULT_POLICIES

    given = side_sweep(sweep, **options)
    given = dataclasses.replace(given, jobs=given.jobs if given.jobs is not None else 1)
    try:
        cell = parse_cell(model_type, column)
    except BisectError as exc:
        raise InputError(str(exc)) from None
    rules.check_limits(jobs=given.jobs, timeout=given.timeout)
    check, policy = sweep_selection(cell, _is_policy)
    if cell.column and (given.checks or given.policies):
        raise InputError("--checks and --policies are for any cell of a type; COLUMN already names its check")
    chosen = (check,) if check else given.checks or DEFAULT_CHECKS
    rules.check_names(chosen, cell.column or BY_NAME["checks"].flag)
    chosen_policies = (policy,) if policy else given.policies or (None if cell.column else DEFAULT_POLICIES)
    setup = runner.side_setup(WHAT, engines, force=force)
    if not cell.column:
        chosen_policies = runner.engine_policies(setup, chosen_policies)
    measured = only_type(cell.model_type, dataclasses.replace(given, checks=chosen, policies=chosen_policies))
    return Probe(cell, measured, outdir, _step_options(given, engines, force), setup,
                 weights=bool(across_releases(chosen)))


def _step_options(given: SideSweep, engines: Sequence[str], force: bool = False) -> tuple[str, ...]:
    """bisect-step's own options: the sweep's it takes (STEP_OPTIONS, by the sweep's own
    spelling), and --engine."""
    steps = SideSweep(**{name: getattr(given, name) for name in STEP_OPTIONS})
    return (*steps.flags(), *(option for engine in engines for option in ("--engine", engine)),
            *(("--force-transformers",) if force and engines else ()))


def _is_policy(name: str) -> bool:
    import auditor.engines  # noqa: F401  (registers the engines' policies)
    from auditor.engines.decorating import ALIASES, CHECK_POLICIES

    return name in CHECK_POLICIES or name in ALIASES


# -- releases of the package index ---------------------------------------------------------------

@dataclass(frozen=True)
class ReleaseBisection:
    """Where the cell changed among `span` (good end first); None for a release that could not be measured."""

    cell: BisectTarget
    span: tuple[str, ...]
    states: dict[str, State | None]  # in the order tried
    outcome: Bounds

    @property
    def skipped(self) -> list[str]:
        return sorted((r for r, s in self.states.items() if s is None), key=self.span.index)


def bisect_releases(probe: Probe, good: str, bad: str, events: SideEvents | None = None) -> ReleaseBisection:
    """The first release from `good` to `bad` where the cell is not as at `good`. An end that
    cannot be installed, or a cell the same at both ends, is an InputError; Ctrl-C is RunInterrupted."""
    events = events or SideEvents()
    try:
        span = releases.releases_between(good, bad, releases.index_releases())
    except ReleaseError as exc:
        raise InputError(str(exc)) from None
    for release in span:
        if probe.setup is not None:
            runner.refuse_excluded(probe.setup, release, release)
    states: dict[str, State | None] = {}
    try:
        with runner.venv_lock(runner.SIDES_LOCK, events):
            for end in (span[0], span[-1]):
                states[end] = probe.measure(end, end, events, saves=end == span[0])
                if states[end] is None:
                    raise InputError(f"transformers {end}, an end of the range, gave the cell no state "
                                     "(the step that failed, or a flaky cell, is told above)")
            _check_ends(states[span[0]], states[span[-1]], probe.cell, span[0], span[-1])
            while (release := next_probe(span, states)) is not None:
                states[release] = probe.measure(release, release, events)
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=probe.outdir) from None
    return ReleaseBisection(probe.cell, tuple(span), states, bounds(span, states))


def _check_ends(good: State, bad: State, cell: BisectTarget, good_name: str, bad_name: str) -> None:
    try:
        check_ends(good, bad, cell, good_name, bad_name)
    except BisectError as exc:
        raise InputError(str(exc)) from None


# -- commits of a local checkout, driven by `git bisect run` ------------------------------------------

@dataclass(frozen=True)
class CommitBisection:
    """What `git bisect run` found: the first bad `commit` (None when it named none)."""

    cell: BisectTarget
    good: State
    bad: State
    commit: str | None
    subject: str  # the commit's subject line
    commits: int  # the commits after good up to bad
    tried: int  # the commits installed between the ends
    only_skipped: bool  # git narrowed it to commits that could not be measured (it lists them)
    git_exit: int


def bisect_commits(probe: Probe, repo: Path, good: str, bad: str,
                   events: SideEvents | None = None) -> CommitBisection:
    """The first commit from `good` to `bad` (refs of the checkout `repo`) where the cell changes.
    The checkout must be clean; it is left where it was. Ctrl-C is RunInterrupted."""
    events = events or SideEvents()
    repo, (good_commit, bad_commit) = checked_repo(repo, (good, bad))
    if git(repo, "merge-base", "--is-ancestor", good_commit, bad_commit, check=False).returncode:
        raise InputError(f"--good {good} is not an ancestor of --bad {bad}")
    git(repo, "bisect", "start")  # remembers where the checkout was, for the reset
    try:
        states = _measure_ends(probe, repo, {"good": good_commit, "bad": bad_commit}, events)
        _check_ends(states["good"], states["bad"], probe.cell, good, bad)
        git(repo, "bisect", "bad", bad_commit)
        git(repo, "bisect", "good", good_commit)
        step = [*STEP_COMMAND, "bisect-step", probe.cell.model_type,
                *([probe.cell.column] if probe.cell.column else []), "--repo", str(repo),
                "--good-results", str(probe.outdir / "good"), "--output", str(probe.outdir / "commits"),
                *probe.step_options]
        run = subprocess.run(["git", "-C", str(repo), "bisect", "run", *step], stdout=subprocess.PIPE,
                             stderr=None, text=True, check=False)
        events.output(run.stdout)
        log = git(repo, "bisect", "log").stdout
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=probe.outdir) from None
    finally:
        reset = git(repo, "bisect", "reset", check=False)
        if reset.returncode:
            events.note(f"could not `git bisect reset` {repo} (do it by hand): "
                        f"{reset.stderr.strip() or reset.stdout.strip()}")
    tried = sum(line.startswith(("git bisect good", "git bisect bad", "git bisect skip"))
                for line in log.splitlines()) - 2
    commit = first_bad_commit(run.stdout)
    subject = git(repo, "log", "-1", "--format=%s", commit).stdout.strip() if commit else ""
    count = int(git(repo, "rev-list", "--count", f"{good_commit}..{bad_commit}").stdout.strip())
    return CommitBisection(probe.cell, states["good"], states["bad"], commit, subject, count, tried,
                           "only 'skip'ped commits left" in run.stdout, run.returncode)


def _measure_ends(probe: Probe, repo: Path, ends: dict[str, str], events: SideEvents) -> dict[str, State]:
    states = {}
    with runner.venv_lock(runner.SIDES_LOCK, events):
        for name, commit in ends.items():
            git(repo, "checkout", "--quiet", "--detach", commit)
            states[name] = probe.measure(str(repo), name, events, saves=name == "good")
            if states[name] is None:
                raise InputError(f"the checkout at --{name} {commit[:12]} gave the cell no state "
                                 "(the step that failed, or a flaky cell, is told above)")
    return states


@dataclass(frozen=True)
class StepOutcome:
    """One step of `git bisect run`: the commit measured, what it showed, and the step's exit code."""

    head: str
    state: State | None  # None: could not be installed or swept
    verdict: int  # GIT_GOOD, GIT_BAD or GIT_SKIP


def bisect_step(probe: Probe, repo: Path, *, good_results: Path | None = None, good_status: str | None = None,
                events: SideEvents | None = None) -> StepOutcome:
    """Measure the checkout `repo` as it is and compare it with the good state: a run of a good
    commit (`good_results`) or the COLUMN's status there (`good_status`, `absent` for none)."""
    events = events or SideEvents()
    repo, (head,) = checked_repo(repo, ("HEAD",), bisecting=True)
    if good_results is not None:
        good = cell_state(cells_of(runner.read_side(good_results, "--good-results: ", events)), probe.cell)
    elif not probe.cell.column:
        raise InputError("--good-status needs COLUMN (for any cell of a type, give --good-results)")
    else:
        good = State(() if good_status == "absent" else (Entry(probe.cell.column, good_status or ""),))
    with runner.venv_lock(runner.SIDES_LOCK, events):
        state = probe.measure(str(repo), head[:12], events)
    return StepOutcome(head, state, step_verdict(good, state))
