"""The resume step: the header that records a sweep's experiment, and what a resumed run has done.

The experiment is every option declared with `experiment` (auditor/sweeping/options.py) and the
versions the auditor runs under: a resume under any other value is refused, so that the rows of
two experiments never mix in one results.jsonl.
"""

from __future__ import annotations

from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.results import FORMAT_VERSION, TORN_SUFFIX, ResultsFileError, read_run, repair
from auditor.sweeping.events import SweepEvents
from auditor.sweeping.options import BY_NAME, EXPERIMENT, INFO_FIELDS, Kind, Option, command_line, flags
from auditor.sweeping.plan import SweepPlan
from auditor.sweeping.validate import shard_text

# What else makes two sweeps one experiment: (what differs, the RunInfo field, what sets it).
_ENVIRONMENT = (
    ("Python", "python", "the Python that runs the auditor"),
    ("torch", "torch", "the installed torch"),
    ("transformers", "transformers", "the installed transformers"),
    ("serving engines", "engine_versions", "the installed serving engines (auditor.core.engineinfo)"),
)
_LISTS = (Kind.NAMES, Kind.LIST, Kind.PATHS)


def header(plan: SweepPlan):
    """The RunInfo of the plan's results header."""
    from auditor import engines
    from auditor.core.runinfo import describe_device, probe

    request = plan.request
    return probe(request.command or command_line(request, plan.outdir),
                 device=describe_device(request.device) if plan.runs_models else "meta",
                 checks=request.checks, label=request.label, shard=shard_text(request.shard),
                 experiment=experiment(plan),
                 engines=tuple(engine.record(own=engine.runs_own_code(request.checks, request.policies))
                               for engine in engines.all()),
                 selection=tuple(selection_flags(request)), repeat=tuple(repeat_flags(request)))


# The options that choose the model types (a run of another selection is never "the last run").
_SELECTING = ("models", "exclude", "remote_code", "checkpoints")
# Not carried into the command that sweeps one cell again: the selection it replaces (the
# remote-code directories and checkpoints stay: the row is theirs), and what only names or slices the run (a
# shard would leave the model type out).
_NOT_REPEATED = frozenset({"models", "exclude", "checks", "label", "shard"})


def selection_flags(request) -> list[str]:
    """The flags of `request` that chose its model types, as given (none: every type)."""
    return flags(**{name: getattr(request, name) for name in _SELECTING})


def repeat_flags(request) -> list[str]:
    """The flags that sweep one of `request`'s cells again beside --models and --checks: the
    options that change what a cell means (those a resume is checked against: policies, device,
    plugins, ...) and the remote-code directories and checkpoints, where they are not the defaults."""
    values = {}
    for option in (*EXPERIMENT, BY_NAME["remote_code"], BY_NAME["checkpoints"]):
        value = getattr(request, option.name)
        if option.name not in _NOT_REPEATED and value not in (None, (), False, option.initial()):
            values[option.name] = value
    return flags(**values)


def engine_notes(info) -> list[str]:
    """What a sweep says first of the engines it meets: which release each one's rows answer
    for (the installed one's own code, the release record its emulation follows), and where
    those are two releases."""
    from auditor import engines

    if not info.engines:
        return []
    notes = [f"Serving engines: {info.engine_versions}"]
    notes += [f"{e.title}'s own code runs under an environment shim: {shim}" for e in info.engines for shim in e.shims]
    return notes + [note for engine in engines.all() if (note := engine.release_note())]


def experiment(plan: SweepPlan) -> dict:
    """What the header records beyond RunInfo's own fields, so that a resume can be checked."""
    recorded = {}
    for option in EXPERIMENT:
        if option.name not in INFO_FIELDS:
            value = getattr(plan.request, option.name)
            recorded[option.name] = list(value) if option.kind in _LISTS else \
                bool(value) if option.kind is Kind.SWITCH else value
    return recorded


def _recorded(info, option: Option):
    value = getattr(info, option.name) if option.name in INFO_FIELDS else info.experiment.get(option.name)
    return ",".join(value or []) if option.kind in _LISTS else value


def conflicts(run_info, info) -> list[str]:
    """How `info` (this command's header) is another experiment than `run_info` (the run's)."""
    differing = [(option.flag, option.experiment, _recorded(run_info, option), _recorded(info, option))
                 for option in EXPERIMENT]
    differing += [(source, what, getattr(run_info, name), getattr(info, name)) for what, name, source in _ENVIRONMENT]
    return [f"{flag} ({what}): the run has {_shown(theirs)}, this command {_shown(ours)}"
            for flag, what, theirs, ours in differing if theirs != ours]


def already_done(path: Path, info, events: SweepEvents) -> set[str]:
    """The model types a resumed run already has, after checking that this request continues the
    same experiment and repairing a torn tail. InputError before any work otherwise."""
    try:
        run = read_run(path)
    except ResultsFileError as exc:
        raise InputError(f"cannot resume: {exc}") from None
    if run.format_version != FORMAT_VERSION:
        raise InputError(f"cannot resume {path}: an older auditor wrote it (results format {run.format_version}, "
                         "without completion records); start a new run (another --output, or --overwrite)")
    found = conflicts(run.info, info)
    if found:
        raise InputError(f"cannot resume {path}: this command is another experiment than the one it holds; "
                         "rows of both would mix in one file:\n  " + "\n  ".join(found) +
                         "\nUse the resume command the interrupted sweep printed, or start a new run.")
    try:
        damage = repair(path)
    except OSError as exc:
        raise InputError(f"cannot repair {path} before resuming: {exc.strerror or exc}") from None
    if damage is not None:
        events.note(f"Repaired {path}: took out {damage.note()} (kept in {path.name}{TORN_SUFFIX}); "
                    "those model types run again.")
    already = run.done_model_types
    events.note(f"Resuming: {len(already)} model types already done.")
    return already


def _shown(value) -> str:
    return "(none)" if value in ("", None, []) else repr(value) if isinstance(value, str) else str(value)
