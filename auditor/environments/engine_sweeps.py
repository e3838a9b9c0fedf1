"""`auditor sweep --engine vllm==0.34.0`: an engine's own-code rows, from a venv of its own.

A user audits where they work, and the engine they serve with runs elsewhere: vLLM and SGLang
pin their own torch builds (and transformers ranges), so neither need be installed where the
audit runs, nor can both be in one venv. `--engine NAME==VERSION` (repeatable) makes or reuses a
venv with that engine, this auditor and the transformers under audit (upgrade-check's side
venvs: the packaged nox session, uv where present), sweeps there the checks that run the
engine's own code (its `serves` answer, the backend's gates through the engine's functions, its
decorator's policy), and writes them as a run of their own, `OUTPUT/engines/NAME-VERSION/`,
beside the run of this environment; OUTPUT's report is rendered from both, one column group per
environment, each with its verdict line (the engine's own answer in its venv; the emulation's
here). `--engine NAME` alone, or the version installed here, needs no venv: this sweep runs the
engine's own code itself (its `serves` check and policy are added).

Bad input exits 2 before any install (`plan_engines`): an engine the auditor does not know, a
release the package index does not have, a transformers under audit that the release's own
requirement excludes (quoted), or a transformers that is not a release (a venv cannot install it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from auditor.core.errors import InputError, RunInterrupted
from auditor.core.results import Run
from auditor.environments import runner
from auditor.environments.runner import SideEvents
from auditor.environments.steps import Side, Step, Transformers

WHAT = "sweep --engine"
ENGINES_DIR = "engines"  # OUTPUT/engines/NAME-VERSION: the run of each engine's venv
LOCK = "engines"  # the engine venvs' lock in the venv home
# The checks whose rows an engine's own code can compute; the rest run here only.
OWN_CODE_CHECKS = ("decorate", "backend")


@dataclass(frozen=True)
class EngineSweep:
    """One --engine: installed here (its own code runs in this sweep), or a venv's install and sweep."""

    spec: object  # auditor.environments.engines.EngineSpec
    here: bool
    side: Side | None = None
    install: Step | None = None
    sweep: Step | None = None

    @property
    def outdir(self) -> Path | None:
        return self.side.outdir if self.side is not None else None


@dataclass(frozen=True)
class EnginePlan:
    engines: tuple[EngineSweep, ...]
    request: object  # the SweepRequest of this environment's sweep (the engines here added)

    @property
    def venvs(self) -> tuple[EngineSweep, ...]:
        return tuple(e for e in self.engines if not e.here)

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every venv's install first (a release pip cannot install fails in minutes, before any
        sweep), then their sweeps."""
        return (*(e.install for e in self.venvs), *(e.sweep for e in self.venvs))


def transformers_under_audit() -> Transformers:
    """The transformers installed here, as the engine venvs install it; an InputError when it is
    not a release the package index can give a venv (a source tree, a dev build)."""
    from packaging.version import Version

    try:
        version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        raise InputError("transformers is not installed here: nothing to audit") from None
    parsed = Version(version)
    if parsed.local or parsed.is_devrelease:
        raise InputError(f"transformers {version} here is not a release: an engine's venv cannot install it; "
                         "audit a release, or install the engine here and pass --engine NAME")
    return Transformers(given=version, requirement=f"transformers=={version}", version=version, slug=version)


def checked_engines(request) -> tuple[tuple[object, object], ...]:
    """(EngineSpec, Engine) of each --engine, checked before anything is made (InputError): a
    known engine, a release on the package index, one whose transformers requirement takes the
    transformers under audit."""
    from auditor import engines as known

    specs = runner.parse_engines(request.engines)
    transformers = transformers_under_audit() if specs else None
    checked = []
    for spec in specs:
        if spec.excludes(transformers.version):
            if not getattr(request, "force_transformers", False):
                raise InputError(f"transformers {transformers.version} (installed here, under audit) is outside what "
                                 f"{spec.title} accepts: it requires transformers{spec.transformers} "
                                 "(its Requires-Dist); audit a transformers in that range, choose another release, "
                                 "or force this pairing with --force-transformers")
            spec = dataclasses.replace(spec, forced=True)
        checked.append((spec, known.get(spec.name)))
    return tuple(checked)


def plan_engines(request, outdir: Path, checked: Sequence[tuple[object, object]] | None = None,
                 asked: Sequence[str] | None = None) -> EnginePlan:
    """The engines of `request.engines` (`checked_engines`, unless given) planned: the ones
    installed here at that version add their own checks and policy to this sweep; each other
    gets a venv and a sweep of the checks that run its own code into OUTDIR/engines/."""
    from auditor.sweeping.options import listed

    checked = checked_engines(request) if checked is None else checked
    here = [(spec, engine) for spec, engine in checked if engine.installed and engine.version == spec.version]
    away = [(spec, engine) for spec, engine in checked if (spec, engine) not in here]
    checks, policies = list(listed(request.checks)), list(listed(request.policies))
    for _, engine in here:
        checks += ["serves"] if engine.serves is not None else []
        policies += [engine.policy] if engine.policy else []
    request = dataclasses.replace(request, checks=tuple(dict.fromkeys(checks)),
                                  policies=tuple(dict.fromkeys(policies)))
    planned = [EngineSweep(spec, True) for spec, _ in here]
    if away:
        transformers = transformers_under_audit()
        setup = runner.side_setup(WHAT, [spec.requirement for spec, _ in away])
        for spec, engine in away:
            planned.append(_venv_sweep(spec, engine, setup, transformers, outdir, request, asked))
    return EnginePlan(tuple(planned), request)


def own_checks(engine, checks: Sequence[str]) -> list[str]:
    """The checks an engine's venv sweeps: those of `checks` its own code computes rows of (`weights`
    too where the engine has its own weight loader: its `weights/<engine>` rows; `tokenizer` where
    it loads tokenizers its own way: `tokenizer/<engine>`), and its `serves` answer where it has one."""
    weights = ["weights"] if "weights" in checks and engine.loads_weights is not None else []
    tokenizer = ["tokenizer"] if "tokenizer" in checks and engine.tokenizes is not None else []
    outputs = ["outputs"] if "outputs" in checks and engine.runs is not None else []
    return ([c for c in OWN_CODE_CHECKS if c in checks] + weights + tokenizer
            + (["serves"] if engine.serves is not None else []) + outputs)


def checks_here(checks, checked: Sequence[tuple[object, object]]) -> tuple[str, ...]:
    """The checks this environment sweeps: `checks` but those only an engine's venv can answer
    here (`serves`, where no engine that answers it is installed here and an --engine's venv
    will: it is validated and run there, its rows joining this run's report). Where that leaves
    nothing, this environment builds (`build`): the report's rows of the types swept here."""
    from auditor.checks import get
    from auditor.sweeping.options import listed

    names = listed(checks)
    away = [engine for spec, engine in checked if not (engine.installed and engine.version == spec.version)]
    answered = {name for engine in away for name in own_checks(engine, names) if name in names}
    local = tuple(name for name in names if name not in answered or _runs_here(get(name)))
    return local or ("build",)


def _runs_here(check) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(module) is not None for module in check.requires)


def _venv_sweep(spec, engine, setup, transformers: Transformers, outdir: Path, request,
                asked: Sequence[str] | None = None) -> EngineSweep:
    from auditor.environments.engines import ENGINES_ENV
    from auditor.environments.venvs import release_steps
    from auditor.sweeping.options import listed, side_path
    from auditor.sweeping.sides import SideSweep

    checks = own_checks(engine, listed(asked) if asked is not None else request.checks)
    if not checks:
        raise InputError(f"--engine {spec.requirement}: none of --checks {','.join(request.checks)} runs "
                         f"{engine.title}'s own code; add backend or decorate")
    name = f"{spec.distribution or spec.name}-{spec.version}"
    # The same selection there (the --checkpoint folders too), and what a --weights-from holds
    # (checkpoints, tokenizers) for the checks across releases.
    from auditor.checks import across_releases

    weights_from = side_path(request.weights_from) if across_releases(checks) and request.weights_from else None
    sweep = SideSweep(models=request.models, exclude=request.exclude, checks=tuple(checks),
                      policies=(engine.policy,), jobs=request.jobs, timeout=request.timeout, shard=request.shard,
                      checkpoints=tuple(side_path(folder) for folder in request.checkpoints), weights_from=weights_from)
    build = f", {spec.distribution}" if spec.distribution else ""
    forced = f", transformers {transformers.version} forced" if spec.forced else ""
    label = f"{engine.title} {spec.version} (venv{build}{forced})"
    from auditor.environments.sides.noxfile import FORCE_ENV, REMOVE_ENV

    # this venv's engine alone: what the others' builds would force or remove is not its own
    shared = {k: v for k, v in setup.env.items() if k not in (FORCE_ENV, REMOVE_ENV)}
    env = {**shared, ENGINES_ENV: spec.requirement, **runner.engine_install_env((spec,), spec.forced)}
    install, run = release_steps(transformers, outdir=(outdir / ENGINES_DIR / name).resolve(),
                                 envdir=setup.home / ENGINES_DIR / name, noxfile=runner.NOXFILE, nox=setup.nox,
                                 sweep=sweep, label=label, name=name, env=env)
    side = dataclasses.replace(install.side, engines=(f"{spec.name} {spec.version}",))  # as the run's header names it
    return EngineSweep(spec, False, side, dataclasses.replace(install, side=side), dataclasses.replace(run, side=side))


def install_engines(plan: EnginePlan, events: SideEvents, *, resume: bool, overwrite: bool) -> None:
    """Every engine venv made or brought up to date; an InputError naming the one that could not be."""
    for engine in plan.venvs:
        runner.prepare_outdir(engine.outdir, resume=resume, overwrite=overwrite)
    _run(plan, [e.install for e in plan.venvs], events)


def sweep_engines(plan: EnginePlan, events: SideEvents) -> tuple[Run, ...]:
    """Each engine venv's sweep, and its run read back (refused if it ran another engine release
    or transformers than planned)."""
    _run(plan, [e.sweep for e in plan.venvs], events)
    return tuple(runner.read_swept(e.side, events, context=f"the {e.side.name} venv left no readable results: ",
                                   hint=" (results of an earlier run? rerun with --overwrite)")
                 for e in plan.venvs)


def _run(plan: EnginePlan, steps: Sequence[Step], events: SideEvents) -> None:
    if not steps:
        return
    try:
        with runner.venv_lock(LOCK, events):
            runner.run_steps(steps, events)
    except KeyboardInterrupt:
        raise RunInterrupted(results_path=steps[0].side.outdir) from None


@dataclass(frozen=True)
class EngineOutcome:
    """This environment's sweep, the engine venvs' runs, and the report of all of them."""

    outcome: object  # auditor.sweeping.events.SweepOutcome of this environment's sweep
    runs: tuple[Run, ...]  # the engine venvs' runs, in --engine order
    written: tuple[Path, ...]  # OUTPUT's report files, rendered from every run
    gate_hits: tuple = ()  # the fail_on rules' cells, in every run

    @property
    def all_runs(self) -> tuple[Run, ...]:
        return (self.outcome.run, *self.runs)

    @property
    def sweep_outcome(self):
        """This environment's SweepOutcome, with the files and gate of every run and the engine venvs' runs."""
        return dataclasses.replace(self.outcome, files=self.written, gate_hits=self.gate_hits, engine_runs=self.runs)


def run_sweep(request, events, venv_events: SideEvents | None = None, rules: tuple = (),
              expected=None) -> EngineOutcome:
    """One sweep, wherever it runs: here alone (auditor.sweeping.run.run_request) when
    `request.engines` is empty, else with each --engine's venv too (`sweep_with_engines`). The one
    place that chooses; the API's sweep and the atlas's sweep of this interpreter's release call it."""
    if not request.engines:
        from auditor.sweeping.run import run_request

        outcome = run_request(request, events, rules, expected)
        return EngineOutcome(outcome, (), outcome.files, outcome.gate_hits)
    return sweep_with_engines(request, events, venv_events, rules=rules, expected=expected)


def sweep_with_engines(request, events, venv_events: SideEvents | None = None, rules: tuple = (),
                       expected=None) -> EngineOutcome:
    """`auditor sweep --engine ...`: every input checked (this sweep's, then the engines'), the
    engine venvs installed, this environment swept, then each venv, and OUTPUT's report
    rendered from all the runs. A venv that cannot be installed or swept is an InputError; this
    environment's rows are kept whatever the venvs do."""
    from auditor.report import write_report
    from auditor.report.baseline import expected_matrix
    from auditor.report.gate import gate_hits
    from auditor.sweeping.events import SweepEvents
    from auditor.sweeping.run import run_request
    from auditor.sweeping.select import select
    from auditor.sweeping.tables import extra_files
    from auditor.sweeping.validate import validate

    venv_events = venv_events or SideEvents()
    checked = checked_engines(request)  # the engines first: nothing is made for a refused one
    asked = request.checks  # the venvs' own checks are chosen from these (`outputs` runs only there)
    request = dataclasses.replace(request, checks=checks_here(request.checks, checked))
    here = validate(dataclasses.replace(request, engines=()))
    select(here, SweepEvents())  # an empty selection too, before a venv is made
    outdir = here.outdir
    plan = plan_engines(dataclasses.replace(request, output=outdir), outdir, checked, asked)
    install_engines(plan, venv_events, resume=request.resume, overwrite=request.overwrite)
    outcome = run_request(dataclasses.replace(plan.request, engines=()), events, rules, expected)
    runs = sweep_engines(plan, venv_events)
    if not runs:
        return EngineOutcome(outcome, (), outcome.files, outcome.gate_hits)
    every = (outcome.run, *runs)
    try:
        written = tuple(write_report(every, outcome.outdir, expected, outcome.previous))  # since the last run too
        # --junit and --markdown over every run too, in place of this environment's alone
        written += tuple(extra_files(every, request.junit, request.markdown, expected, outcome.previous))
    except OSError as exc:
        raise InputError(f"cannot write to {outcome.outdir}: {exc.strerror or exc}") from None
    hits = tuple(gate_hits(expected_matrix(list(every), expected), rules)) if rules else ()
    return EngineOutcome(outcome, runs, written, hits)
