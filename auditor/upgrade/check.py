"""Running `upgrade-check`: the same sweep under two transformers, each in its own venv.

`plan_check` finds everything that can be wrong with the request before any venv is touched
(InputError); `run_check` installs both sides, then sweeps each, and writes the two side by side.
The diff of the two runs is `auditor.diff(outcome.base, outcome.new, allow)`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.checks import across_releases
from auditor.core.errors import InputError, RunInterrupted
from auditor.core.results import Run
from auditor.environments import runner
from auditor.environments.runner import SideEvents
from auditor.environments.steps import TransformersSpecError, allowing_absent, parse_transformers
from auditor.sweeping import validate as rules
from auditor.sweeping.options import side_path
from auditor.sweeping.sides import SideSweep, side_sweep
from auditor.upgrade.plan import UpgradePlan, default_outdir, plan_upgrade

WHAT = "upgrade-check"


@dataclass(frozen=True)
class UpgradeOutcome:
    """Both sides swept: their runs, and the merged report of the two in `plan.outdir`."""

    plan: UpgradePlan
    base: Run
    new: Run
    written: tuple[Path, ...]


def plan_check(base: str, new: str, sweep: SideSweep | None = None, *, output: str | os.PathLike | None = None,
               allow: str | os.PathLike | None = None, resume: bool = False, overwrite: bool = False,
               cwd: Path | None = None, engines: Sequence[str] = (), to_engines: Sequence[str] = (),
               force: bool = False, **options) -> UpgradePlan:
    """The steps comparing transformers `base` and `new` (releases, or local wheels, sdists or
    source trees); `output` (relative to `cwd`) defaults to reports/upgrade-BASE-to-NEW. `sweep`
    (a SideSweep), or its fields as keyword `options` (models, exclude, checks, policies, jobs,
    timeout, checkpoints, ...), is what both sides sweep; an option not given keeps the sweep's
    default. `engines` ("vllm==0.33.0") are installed into both sides, whose sweeps then also run
    the engines' own functions; `to_engines` ("vllm==0.34.0") replace those of the same name on
    the new side (an engine upgrade: `new` may then be `base`). Bad input (a side an engine
    excludes among it) is an InputError, found before any venv is touched. `checkpoints`
    (--checkpoint folders, relative to `cwd`) are audited on both sides: does the user's
    checkpoint still load, map and serve under the new release."""
    from auditor.sweeping.options import DEFAULT_CHECKS, DEFAULT_POLICIES

    sweep = side_sweep(sweep, resume=resume, **options)
    rules.check_limits(jobs=sweep.jobs, timeout=sweep.timeout, resume=resume, overwrite=overwrite)
    rules.check_selection(sweep.models, sweep.exclude)
    # Both sides get the checks and policies explicitly: they run this checkout, and a default
    # that changes between the two sweeps would make their columns differ.
    checks = sweep.checks if sweep.checks is not None else DEFAULT_CHECKS
    policies = sweep.policies if sweep.policies is not None else DEFAULT_POLICIES
    rules.check_names(checks)
    cwd = cwd or Path.cwd()
    checkpoints = tuple(side_path(folder, cwd) for folder in sweep.checkpoints)
    rules.checkpoint_cases(checkpoints)
    if allow is not None:
        _read_allow_list(Path(allow))
    try:
        base_spec, new_spec = parse_transformers(base, cwd), parse_transformers(new, cwd)
    except TransformersSpecError as exc:
        raise InputError(str(exc)) from None
    setup = runner.side_setup(WHAT, engines, force=force)
    new_setup = runner.side_setup(WHAT, _upgraded(engines, to_engines), force=force) if to_engines else setup
    for spec, flag, side in ((base_spec, "--from", setup), (new_spec, "--to", new_setup)):
        _refuse_unreleased(spec, flag)
        runner.refuse_excluded(side, spec.version, f"{spec.given} ({flag})")
    if runner.engine_policies(setup, policies) != runner.engine_policies(new_setup, policies):
        raise InputError("--to-engine names an engine --engine does not: both sides must run the same checks")
    try:
        outdir = cwd / (output if output is not None else default_outdir(
            base_spec, new_spec, base_engines=setup.engine_labels, new_engines=new_setup.engine_labels))
        sweep = allowing_absent(dataclasses.replace(sweep, checks=checks, checkpoints=checkpoints,
                                                 policies=runner.engine_policies(setup, policies)))
        return plan_upgrade(
            base_spec, new_spec, outdir=outdir, noxfile=runner.NOXFILE, nox=setup.nox, sweep=sweep,
            envdir=setup.home, env=setup.env,
            engines=setup.engine_labels, new_engines=new_setup.engine_labels, new_env=new_setup.env,
            weights=bool(across_releases(checks)),
        )
    except TransformersSpecError as exc:
        raise InputError(str(exc)) from None


def _refuse_unreleased(spec, flag: str) -> None:
    """A side given as a release must be one the package index has (the index's list, as bisect
    and versions read it): an InputError naming the nearest, before any venv is touched."""
    from auditor.environments import releases

    if spec.is_path:
        return
    try:
        releases.find_release(spec.version, releases.index_releases())
    except releases.ReleaseError as exc:
        raise InputError(f"{flag} {spec.given}: {exc}") from None


def _upgraded(engines: Sequence[str], to_engines: Sequence[str]) -> list[str]:
    """--engine's list with each --to-engine in place of the one of its name; an InputError for a
    --to-engine of an engine --engine does not name."""
    from auditor.environments.engines import EngineSpecError, engine_requirement

    def name(text: str, flag: str = "") -> str:
        try:
            return engine_requirement(text, flag).name.lower()
        except EngineSpecError as exc:
            raise InputError(str(exc)) from None

    by_name = {name(text): text for text in engines}
    for text in to_engines:
        if name(text, "--to-engine") not in by_name:
            raise InputError(f"--to-engine {text}: give the engine's release on the base side too "
                             f"(--engine {name(text)}==VERSION)")
        by_name[name(text)] = text
    return list(by_name.values())


def _read_allow_list(path: Path) -> None:
    from auditor.report.diff import AllowListError, parse_allow_list

    try:
        parse_allow_list(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise InputError(f"cannot read allow list {path}: {exc.strerror or exc}") from None
    except AllowListError as exc:
        raise InputError(str(exc)) from None


def run_check(plan: UpgradePlan, events: SideEvents | None = None, *, resume: bool = False,
              overwrite: bool = False) -> UpgradeOutcome:
    """Install both sides, sweep each, and write their merged report. A side that cannot be
    installed or swept is an InputError; Ctrl-C is RunInterrupted (the finished rows are kept in
    `plan.outdir`: the same plan with resume continues)."""
    events = events or SideEvents()
    for side in plan.sides:
        runner.prepare_outdir(side.outdir, resume=resume, overwrite=overwrite)
    try:
        with runner.venv_lock(runner.SIDES_LOCK, events):
            runner.run_steps(plan.steps, events)
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=plan.outdir) from None
    base, new = (runner.read_swept(side, events, context=f"the {side.name} side left no readable results: ",
                                   hint=" (results of an earlier run? rerun with --overwrite)")
                 for side in plan.sides)
    from auditor.report import write_report

    try:
        written = write_report([base, new], plan.outdir, previous=base)  # what changed from base to new
    except OSError as exc:
        raise InputError(f"cannot write to {plan.outdir}: {exc.strerror or exc}") from None
    return UpgradeOutcome(plan, base, new, tuple(written))
