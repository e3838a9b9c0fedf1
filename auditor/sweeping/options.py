"""Every option of a sweep, declared once: its field, its flags, how it is parsed, its default,
its help, and what it means for a resumed run.

From these declarations come the parser of `auditor sweep` (`add_arguments`), `SweepRequest` and
its construction from keyword options (`make_request`), what the results header records to
check a `--resume` against (`EXPERIMENT`), the printed resume command (`command_words`), and the
record of what the sweeps of other commands' sides get (sweeping/sides.py: SideSweep, a field per
option with `sides=True`, spelled by `flags`). A new option is one more `Option` here; nothing
else spells it.

Cheap to import (no torch, no checks): the parser and the planners of upgrade-check use it.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import auditor.engines as engines
from auditor.core.outcome import UNCONFIRMED
from auditor.core.results import RUN_ID_RULE

DEFAULT_TIMEOUT = 300.0
DEFAULT_CHECKS = ("build", "decorate", "pickle", "backend")
# --dtype's spellings: torch's names of the floating dtypes a serving engine runs models in.
DTYPES = ("auto", "float32", "bfloat16", "float16")
DEFAULT_POLICIES = ("legacy", "fixed", "fixed-no-config-skip")


class Kind(str, enum.Enum):
    """How an option is typed on the command line and held in a SweepRequest."""

    NAMES = "names"  # repeatable, each comma-separated: a tuple of names
    LIST = "list"  # one comma-separated value: a tuple of names
    PATHS = "paths"  # repeatable, never split (a path may hold a comma): a tuple of strings
    TEXT = "text"
    INT = "int"
    FLOAT = "float"
    SWITCH = "switch"
    PATH = "path"


class Spelled(str, enum.Enum):
    """When the printed resume command spells an option out."""

    NEVER = "never"
    ALWAYS = "always"  # with its value, defaults too: the resumed run must not fall back on another default
    GIVEN = "given"  # only when it is not empty, off or zero


_ANNOTATIONS = {Kind.NAMES: "tuple[str, ...]", Kind.LIST: "tuple[str, ...]", Kind.PATHS: "tuple[str, ...]",
                Kind.TEXT: "str | None", Kind.INT: "int", Kind.FLOAT: "float", Kind.SWITCH: "bool",
                Kind.PATH: "Path | None"}
_TYPES = {Kind.INT: int, Kind.FLOAT: float, Kind.PATH: Path}


@dataclass(frozen=True)
class Option:
    """One sweep option."""

    name: str  # the SweepRequest field and the keyword of `auditor.sweep()`
    flags: tuple[str, ...]  # its command-line flags, the long one first; () for the API only
    kind: Kind
    help: str = ""
    group: str = ""  # the parser's argument group
    default: Any = None
    factory: Callable[[], Any] | None = None  # a default computed when it is needed (the cores)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    # Whether it changes what a cell means, in the words of a refused resume ("" when it does
    # not): such an option is recorded in the results header and may not change on --resume;
    # any other (the limits, where the files go) may.
    experiment: str = ""
    spelled: Spelled = Spelled.NEVER  # in the printed resume command
    executor: str = ""  # the one executor it applies to, "" for both
    sides: bool = False  # upgrade-check, bisect and versions may pass it to the sweeps of their sides
    request: bool = True  # a SweepRequest field (--fail-on is the gate's, given to sweep() apart)

    @property
    def flag(self) -> str:
        return self.flags[0]

    def initial(self) -> Any:
        return self.factory() if self.factory is not None else self.default


def _cores() -> int:
    return os.cpu_count() or 1


_CHECKS_TEXT, _POLICIES_TEXT = ",".join(DEFAULT_CHECKS), ",".join(DEFAULT_POLICIES)
_ENGINE_POLICIES_TEXT, _SEMANTICS = ", ".join(engines.decorator_policies()), engines.default_semantics()

OPTIONS: tuple[Option, ...] = (
    Option("models", ("--models",), Kind.NAMES, group="selection", default=(), metavar="A,B,...", sides=True,
           spelled=Spelled.GIVEN, help="model types or regular expressions to audit (default: all)"),
    Option("exclude", ("--exclude",), Kind.NAMES, group="selection", default=(), metavar="A,B,...", sides=True,
           spelled=Spelled.GIVEN, help="model types or regular expressions to leave out"),
    Option("allow_absent", ("--allow-absent",), Kind.SWITCH, group="selection", default=False, sides=True,
           spelled=Spelled.GIVEN,
           help="a model type --models names exactly that this transformers does not have is left out "
                "and said so, not refused: the sweeps of upgrade-check and versions take it, whose "
                "releases differ in their types (a type only the newer has is a new type in their diff)"),
    Option("plugins", ("--plugin",), Kind.PATHS, group="selection", default=(), metavar="MODULE_OR_FILE",
           experiment="plugins", spelled=Spelled.GIVEN,
           help="import this module or .py file first (in every worker too), "
                "so its AutoConfig/AutoModel registrations are audited"),
    Option("remote_code", ("--remote-code",), Kind.PATHS, group="selection", default=(), metavar="DIR",
           spelled=Spelled.GIVEN,
           help="also audit this local remote-code model directory (loaded with "
                "trust_remote_code=True); alone, without --models, only these are audited"),
    Option("checkpoints", ("--checkpoint",), Kind.PATHS, group="selection", default=(), metavar="DIR", sides=True,
           spelled=Spelled.GIVEN,
           help="also audit this checkpoint (repeatable): a model folder with config.json and safetensors, or a "
                "Hugging Face cache folder (models--ORG--NAME/snapshots/REVISION/), each snapshot a row named "
                "ORG/NAME@REVISION; every check runs on its real config, and the weights check maps its "
                "safetensors headers (never the data); alone, without --models, only these are audited"),
    Option("shard", ("--shard",), Kind.TEXT, group="selection", metavar="I/N", experiment="shard",
           spelled=Spelled.GIVEN, sides=True,
           help="run only the I-th of N deterministic, disjoint slices of the selection "
                "(for CI matrices; `auditor report` merges the shards)"),
    Option("checks", ("--checks",), Kind.LIST, group="checks", default=DEFAULT_CHECKS, experiment="checks",
           spelled=Spelled.ALWAYS, sides=True, help=f"comma-separated checks (default: {_CHECKS_TEXT})"),
    Option("policies", ("--policies",), Kind.LIST, group="checks", default=DEFAULT_POLICIES,
           experiment="policies", spelled=Spelled.ALWAYS, sides=True,
           help=f"decorator policies: legacy, fixed, fixed-no-config-skip, {_ENGINE_POLICIES_TEXT} (an "
                f"engine's real decorator, needs the engine), external:MODULE:ATTR (default: {_POLICIES_TEXT})"),
    Option("weights_save", ("--weights-save",), Kind.PATH, group="checks", metavar="DIR", spelled=Spelled.GIVEN,
           sides=True,
           help="the weights and tokenizer checks keep each type's saved tiny checkpoint, input and outputs, "
                "and its saved tokenizers, in DIR/TYPE (default: a temporary folder per type), for a later "
                "--weights-from"),
    Option("weights_from", ("--weights-from",), Kind.PATH, group="checks", metavar="DIR",
           experiment="weights compared with", spelled=Spelled.GIVEN, sides=True,
           help="the weights and tokenizer checks load the checkpoints and tokenizers another run saved with "
                "--weights-save (an older transformers: upgrade-check's base side) and compare their outputs "
                "and ids with the saved ones, instead of saving their own; a type saved there that this "
                "release lacks is type-removed"),
    Option("device", ("--device",), Kind.TEXT, group="checks", choices=("meta", "cpu", "cuda"),
           experiment="device", spelled=Spelled.ALWAYS,
           help="where the checks that run models (tiny, compile) build them; build and decorate "
                "always use the meta device (default: meta, or cpu when such a check is selected)"),
    Option("backend", ("--backend",), Kind.TEXT, group="checks", experiment="backend", spelled=Spelled.ALWAYS,
           help="torch.compile backend of the compile check: inductor, aot_eager, eager, ... "
                "(default: inductor on cuda, aot_eager on cpu)"),
    Option("dtype", ("--dtype",), Kind.TEXT, group="checks", choices=DTYPES, experiment="dtype",
           spelled=Spelled.ALWAYS,
           help="the dtype the checks that run models (tiny, compile) build them in; 'auto' resolves per type "
                "as the followed engine release resolves dtype='auto' (the config's dtype, float32 downcast to "
                "the device's preferred one; the rule is named on each row) (default: auto on cuda, float32 "
                "on cpu)"),
    Option("compile_encoders", ("--compile-encoders",), Kind.SWITCH, group="checks", default=False,
           experiment="encoders compiled", spelled=Spelled.GIVEN,
           help="the compile check also compiles each encoder component (image, video, audio)"),
    Option("compile_policy", ("--compile-policy",), Kind.TEXT, group="checks", default="fixed",
           experiment="compile policy", spelled=Spelled.ALWAYS,
           help="the decorator policy the compile check builds under (default: fixed)"),
    Option("compile_semantics", ("--compile-semantics",), Kind.TEXT, group="checks", default=_SEMANTICS,
           experiment="compile semantics", spelled=Spelled.ALWAYS, metavar="ENGINE|plain",
           help=f"how the compile check compiles: as a serving engine does ({_SEMANTICS}: its gates "
                "first, guards dropped, the graph of the first length reused at 7, 13 and 29 tokens) or "
                "plain (torch.compile(fullgraph=True) with its guards: transformers' own fullgraph "
                f"question) (default: {_SEMANTICS})"),
    Option("compile_ungated", ("--compile-ungated",), Kind.SWITCH, group="checks", default=False,
           experiment="compile ungated", spelled=Spelled.GIVEN,
           help="compile under an engine's semantics even where its gates stop the model (what its "
                "compile would do once the gates pass); by default such a cell is skipped with the gate's verdict"),
    Option("build_per_policy", ("--build-per-policy",), Kind.SWITCH, group="checks", default=False,
           experiment="a build per policy", spelled=Spelled.GIVEN,
           help="one real meta build per policy and component instead of one recorded build "
                "shared by the project's own policies (slower; the results are the same)"),
    Option("engines", ("--engine",), Kind.PATHS, group="checks", default=(), metavar="NAME[==VERSION]",
           spelled=Spelled.GIVEN,
           help="also run this serving engine's own code (repeatable): NAME==VERSION in a venv of its own "
                "(made or reused, with the transformers under audit) swept into OUTPUT/engines/NAME-VERSION "
                "and reported beside this run; NAME alone, or the version installed here, in this sweep. "
                "A release that does not exist, or that excludes this transformers, exits 2 before any install "
                "(unless --force-transformers). A build of an engine (its CPU build, which runs the outputs "
                "check's forwards on a CPU) is named as pip names it"),
    Option("force_transformers", ("--force-transformers",), Kind.SWITCH, group="checks", default=False,
           help="with --engine NAME==VERSION: install the transformers under audit in the engine's venv even where "
                "the release's own requirement excludes it, after the engine (as an engine's own nightly job "
                "against transformers does); the venv's run is labelled with the forced pairing"),
    Option("jobs", ("--jobs", "-j"), Kind.INT, group="execution", factory=_cores, spelled=Spelled.ALWAYS,
           sides=True, help="worker processes (default: the number of cores)"),
    Option("timeout", ("--timeout",), Kind.FLOAT, group="execution", default=DEFAULT_TIMEOUT,
           spelled=Spelled.ALWAYS, sides=True,
           help=f"seconds per model type before it is a timeout (default {DEFAULT_TIMEOUT:g})"),
    Option("max_memory", ("--max-memory",), Kind.TEXT, group="execution", default="auto", executor="local",
           spelled=Spelled.ALWAYS,
           help="resident memory per worker before its model is `oom`, e.g. 4G, 512M, "
                "'none' (default auto: 80%% of RAM shared by the workers; a type over its share is "
                "rerun alone with all of it)"),
    Option("max_tasks_per_worker", ("--max-tasks-per-worker",), Kind.INT, group="execution", default=0,
           executor="local", spelled=Spelled.GIVEN,
           help="replace a worker after this many model types (default 0: never)"),
    Option("reruns", ("--reruns",), Kind.INT, group="execution", default=1, metavar="N", spelled=Spelled.ALWAYS,
           help="rerun a cell that failed with a status the machine can cause ("
                + ", ".join(sorted(status.value for status in UNCONFIRMED)) + ") up to N times in a fresh worker at the end of the sweep; one "
                "that passes is labelled flaky, both rows kept (default 1; 0: off)"),
    Option("online", ("--online",), Kind.SWITCH, group="execution", default=False, experiment="hub allowed",
           spelled=Spelled.GIVEN, help="allow the Hugging Face hub (default: offline, HF_HUB_OFFLINE=1)"),
    Option("executor", ("--executor",), Kind.TEXT, group="execution", default="local", choices=("local", "ray"),
           spelled=Spelled.GIVEN, sides=True,
           help="local worker processes (default), or tasks on a Ray cluster (the 'ray' extra)"),
    Option("ray_address", ("--ray-address",), Kind.TEXT, group="execution", metavar="HOST:PORT", executor="ray",
           spelled=Spelled.GIVEN, sides=True,
           help="with --executor ray: the cluster to join (default: start a local one with "
                "--jobs CPUs, on loopback, for this run only)"),
    Option("gpus_per_task", ("--gpus-per-task",), Kind.FLOAT, group="execution", default=0.0, metavar="N",
           executor="ray", spelled=Spelled.GIVEN,
           help="with --executor ray: GPUs each task asks for when --checks has a check that "
                "runs models (compile, tiny), so those tasks land on GPU nodes (default 0)"),
    Option("output", ("--output", "-o"), Kind.PATH, group="output", sides=True,
           help="run directory (default: REPORTS/RUN_ID)"),
    Option("reports", ("--reports",), Kind.PATH, group="output", default=Path("reports"),
           help="reports root (default: reports)"),
    Option("run_id", ("--run-id",), Kind.TEXT, group="output",
           help=f"name of the run directory inside REPORTS: {RUN_ID_RULE}, e.g. nightly-5.25.0; "
                "anything else (a path, a branch name with /) exits 2 (default: the UTC time, YYYYMMDD-HHMMSS)"),
    Option("label", ("--label",), Kind.TEXT, group="output", default="", experiment="label", spelled=Spelled.GIVEN,
           sides=True, help="environment label shown in reports"),
    Option("resume", ("--resume",), Kind.SWITCH, group="output", default=False, sides=True,
           help="continue results.jsonl: skip the model types it has whole, repair a cut tail; "
                "refused when this command is another experiment (checks, policies, device, ...)"),
    Option("overwrite", ("--overwrite",), Kind.SWITCH, group="output", default=False, sides=True,
           help="replace an existing results.jsonl"),
    Option("junit", ("--junit",), Kind.PATH, group="output", metavar="FILE",
           help="also write the runs as JUnit XML (one testcase per cell) for CI test reporters"),
    Option("markdown", ("--markdown",), Kind.PATH, group="output", metavar="FILE",
           help="also write the Markdown summary here, e.g. $GITHUB_STEP_SUMMARY "
                "(summary.md is always written next to report.html)"),
    Option("against", ("--against",), Kind.PATH, group="output", metavar="RUN",
           help="an earlier run: report.html, summary.md and the end summary say what changed since it (default: "
                "the newest run of the same environment before this one in the same reports folder)"),
    Option("fail_on", ("--fail-on",), Kind.PATHS, group="gating", default=(), metavar="[COLUMN_GLOB=]STATUS,...",
           request=False,
           help="exit 1 when any cell has one of these statuses, e.g. refused,check-error, or "
                "per column: decorate/*/legacy=refused (expected-by-design failures, and those --expected "
                "lists, never match)"),
    Option("expected", ("--expected",), Kind.PATH, group="gating", metavar="FILE", request=False,
           help="an expected baseline (`auditor baseline RUN -o FILE`): the failures it lists are expected: "
                "--fail-on never matches one, a regression to one blocks nothing, and report.html, "
                "summary.md, the JUnit XML and the end summary show them as expected (the CSV tables do not change)"),
    # What the header records as the command (default: the equivalent `auditor sweep`); the CLI
    # gives its own command line.
    Option("command", (), Kind.TEXT, default=""),
)

BY_NAME: Mapping[str, Option] = {option.name: option for option in OPTIONS}
# The options a resumed run must share with the run it continues, in the order a refusal lists them.
EXPERIMENT: tuple[Option, ...] = tuple(option for option in OPTIONS if option.experiment)
# What RunInfo holds as fields of its own; the other experiment keys go into its `experiment` dict.
INFO_FIELDS = ("checks", "label", "shard")


def _request_field(option: Option) -> tuple[str, str, dataclasses.Field]:
    if option.factory is not None:
        return option.name, _ANNOTATIONS[option.kind], dataclasses.field(default_factory=option.factory)
    return option.name, _ANNOTATIONS[option.kind], dataclasses.field(default=option.default)


SweepRequest = dataclasses.make_dataclass(
    "SweepRequest", [_request_field(option) for option in OPTIONS if option.request], frozen=True)
SweepRequest.__module__ = __name__
SweepRequest.__doc__ = """Everything that says what a sweep does; the arguments of `sweep()`, one field per
option of `OPTIONS` (its help says what it is). Lists that the CLI takes comma-separated
(models, exclude, checks, policies) may be given either way."""


def listed(values, *, split: bool = True) -> tuple[str, ...]:
    """A tuple of names from a string or an iterable of strings, comma-separated ones split."""
    if isinstance(values, (str, os.PathLike)):
        values = [values]
    items = [str(v) for v in values or ()]
    if split:
        items = [item.strip() for value in items for item in value.split(",")]
    return tuple(item for item in items if item)


def given_names(option: Option, value) -> tuple[str, ...]:
    """The names a list option was given (`listed`); an InputError for a value given that names
    none (`--models ''`, what `--models "$MODELS"` gives with the variable unset), which would
    otherwise go unnoticed or, alone, mean the option's default (for --models: every model type).
    Left out (None, an empty list), it keeps its default. The rule of every command that passes
    such an option on."""
    from auditor.core.errors import InputError

    split = option.kind is not Kind.PATHS
    for item in _items(value) if value is not None else ():
        if not listed(item, split=split):
            raise InputError(f"{option.flag} {str(item)!r} names nothing: give at least one name, or leave "
                             f"{option.flag} out (an unset variable?)")
    return listed(value, split=split)


def make_request(**options) -> SweepRequest:
    """A SweepRequest from keyword options, comma-separated strings split and paths made Paths;
    an unknown option is an InputError."""
    from auditor.core.errors import InputError

    names = {option.name for option in OPTIONS if option.request}
    unknown = sorted(set(options) - names)
    if unknown:
        raise InputError(f"unknown sweep option(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    for name, value in options.items():
        kind = BY_NAME[name].kind
        if kind in (Kind.NAMES, Kind.LIST, Kind.PATHS):
            options[name] = given_names(BY_NAME[name], value)
        elif kind is Kind.PATH and value is not None:
            options[name] = Path(value)
    return SweepRequest(**options)


# -- the command line -------------------------------------------------------------------------


def add_arguments(parser) -> None:
    """The options of `auditor sweep`, in their groups, on an argparse parser."""
    groups: dict[str, Any] = {}
    for option in OPTIONS:
        if not option.flags:
            continue
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        groups[option.group].add_argument(*option.flags, dest=option.name, help=option.help, **_argparse(option))


# The sweep's options that other commands take too, with the same meaning (`auditor report`,
# `diff`, `gate`): declared once, by their records here, wherever they are taken.
SHARED = ("fail_on", "expected", "junit")


def add_shared_argument(parser, name: str) -> None:
    """One of the SHARED options, declared on another command's parser by its record: the same flag,
    kind, metavar and help as `auditor sweep`'s."""
    if name not in SHARED:
        raise ValueError(f"{BY_NAME[name].flag} is the sweep's own: not among the options other commands share")
    option = BY_NAME[name]
    parser.add_argument(*option.flags, dest=name, help=option.help, **_argparse(option))


def add_side_arguments(group, names: tuple[str, ...], **defaults: Any) -> None:
    """The sweep options that upgrade-check, bisect and versions pass on to their sides' sweeps,
    declared by the sweep's own records: same flags, kinds, choices and help. Left out, one takes
    `defaults[name]`, or None (the sweep's own default, then) or [] for a list of names."""
    for name in names:
        option = BY_NAME[name]
        if not option.sides:
            raise ValueError(f"{option.flag} is not passed on to the sides")
        keywords, text = _argparse(option), option.help
        if option.kind is not Kind.NAMES:
            keywords["default"] = defaults.get(name)
        if name in defaults:  # the command's own default replaces the sweep's in the help
            text = f"{text.split(' (default')[0]} (default: {defaults[name]})"
        group.add_argument(*option.flags, dest=name, help=text, **keywords)


def _argparse(option: Option) -> dict:
    """add_argument's keywords for an option, besides its flags, dest and help."""
    if option.kind is Kind.SWITCH:
        return {"action": "store_true"}
    keywords: dict[str, Any] = {"metavar": option.metavar} if option.metavar else {}
    if option.choices:
        keywords["choices"] = option.choices
    if option.kind in (Kind.NAMES, Kind.PATHS):
        return {**keywords, "action": "append", "default": []}
    if option.kind in _TYPES:
        keywords["type"] = _TYPES[option.kind]
    initial = option.initial()
    if option.kind is Kind.LIST:
        initial = ",".join(initial)
    if initial is not None:
        keywords["default"] = initial
    return keywords


def values_of(args) -> dict:
    """The SweepRequest keywords of a parsed `auditor sweep` command line."""
    return {option.name: getattr(args, option.name) for option in OPTIONS if option.request and option.flags}


def flags(**values) -> list[str]:
    """Command-line words giving these options, in the order given. A value of None, an empty
    list or a switch that is off is left out (the sweep's default holds); a repeatable option is
    spelled once per value; a list may be given as its comma-separated text."""
    unknown = sorted(set(values) - {option.name for option in OPTIONS if option.flags})
    if unknown:
        raise ValueError(f"not options of auditor sweep: {', '.join(unknown)}")
    words: list[str] = []
    for name, value in values.items():
        option = BY_NAME[name]
        if value is None or value is False or (option.kind is not Kind.LIST and value in ((), [])):
            continue
        if option.kind is Kind.SWITCH:
            words.append(option.flag)
        elif option.kind in (Kind.NAMES, Kind.PATHS):
            words += [word for item in _items(value) for word in (option.flag, item)]
        else:
            words += [option.flag, _text(option, value)]
    return words


def side_path(path, cwd: Path | None = None) -> str:
    """`path` (a --checkpoint folder, a --weights-from one) as a side's sweep reads it: absolute,
    `~` expanded, relative to `cwd` (default: this process's), since that sweep runs elsewhere."""
    return str(((cwd or Path.cwd()) / Path(path).expanduser()).resolve())


def side_flags(**values) -> list[str]:
    """`flags` for the options that upgrade-check, bisect and versions pass to their sides."""
    others = sorted(name for name in values if not BY_NAME[name].sides)
    if others:
        raise ValueError(f"not passed to the sweeps of upgrade-check, bisect and versions: {', '.join(others)}")
    return flags(**values)


def command_line(request, outdir: Path, *, resume: bool = False) -> str:
    """The `auditor sweep` command of a (resolved) request (see `command_words`), to paste."""
    return shlex.join(command_words(request, outdir, resume=resume))


def command_words(request, outdir: Path, *, resume: bool = False) -> list[str]:
    """The `auditor sweep` command of a (resolved) request: its selection, and every option that
    changes what a cell means or the limits it ran under, spelled out (defaults too), so that
    pasting it (with --resume) continues the identical experiment. --output and --resume lead,
    as a person would type them; the others follow in declaration order."""
    values: dict[str, Any] = {"output": outdir, "resume": resume}
    for option in OPTIONS:
        value = getattr(request, option.name, None)
        if option.spelled is Spelled.NEVER or option.executor not in ("", request.executor):
            continue
        if option.spelled is Spelled.GIVEN and (not value or value == option.default):
            continue
        values[option.name] = value
    return ["auditor", "sweep", *flags(**values)]


def _items(value) -> Iterable[str]:
    return [value] if isinstance(value, (str, os.PathLike)) else value


def _text(option: Option, value) -> str:
    if option.kind is Kind.LIST and not isinstance(value, str):
        return ",".join(value)
    return f"{value:g}" if isinstance(value, float) else str(value)
