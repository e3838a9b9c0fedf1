"""What a check is: a named object that turns a model case into results.

A check may raise; the worker maps any exception to a status (auditor.core.status), so a
check only handles the outcomes that are its own (a refusal, a skip).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

# Imported for the engines' decorator policies too (`vllm`): registered with the decorator
# registry on import, so every check resolves them.
from auditor import engines
from auditor.core.classifier import Phase, classify
from auditor.core.results import Result
from auditor.core.status import Failure
from auditor.models.cases import ModelCase


@dataclass(frozen=True)
class Options:
    """What checks need to know of the command line; sent to every worker."""

    # The decorator policies; no default here: the sweep's option declarations hold the one default
    # (auditor/sweeping/options.py), and the sweep always passes them.
    policies: tuple[str, ...]
    checks: tuple[str, ...] = ("build",)
    # Own-decorator policies share one recorded build (models/construction_log.py); False builds per policy.
    shared_policy_build: bool = True
    # --plugin modules: the pickle check's far side imports them too, as another node would.
    plugins: tuple[str, ...] = ()
    # Where the checks that run models (tiny, compile) run them; build and decorate stay on meta.
    device: str = "cpu"
    backend: str = "aot_eager"  # torch.compile backend of the compile check
    # The dtype the checks that run models build them in: a torch dtype's name, or "auto" (per type,
    # as the followed engine resolves dtype="auto": auditor.engines.model_dtype).
    dtype: str = "float32"
    compile_encoders: bool = False  # the compile check also compiles encoder components
    compile_policy: str = "fixed"  # the decorator policy the compile check builds under
    # How the compile check compiles: an engine's way (auditor.engines.compile_semantics) or "plain".
    compile_semantics: str = dataclasses.field(default_factory=engines.default_semantics)
    compile_ungated: bool = False  # compile even where the engine's gates stop the model
    # Where the sweep's Ray cluster for the pickle check's Ray round trip announces its address
    # or why it did not start (auditor.remote.ray_trip.LocalCluster);
    # empty: a worker starts a cluster of its own when it needs one.
    ray_cluster: str = ""
    # The checks across releases (weights, tokenizer): where they save each type's tiny checkpoint
    # and outputs, and its tokenizers (WEIGHTS_SAVE/TYPE; empty: a temporary folder, gone after
    # the type), and the folder of another run's saves they load and compare instead (an older
    # release's: upgrade-check's base side).
    weights_save: str = ""
    weights_from: str = ""

    @property
    def decorator_policies(self) -> tuple[str, ...]:
        """The policies that name a decorator: `policies` without those that select only an
        engine's own gate functions (`sglang`, whose engine has no class decorator)."""
        gate_only = engines.gate_policies()
        return tuple(policy for policy in self.policies if policy not in gate_only)


class Check(abc.ABC):
    """A check: `name` is the first part of its results' column."""

    name: str = ""
    # Importable modules the check needs; the CLI refuses the check up front without them.
    requires: tuple[str, ...] = ()
    # Whether it builds real models on --device (cpu or cuda) rather than on the meta device.
    runs_models: bool = False
    # Whether it saves under one release and compares under another (Options.weights_save/_from).
    across_releases: bool = False

    def start(self, options: Options) -> None:  # noqa: B027  (optional, not abstract)
        """Called once in each pool worker before it reports ready, for what the check keeps
        between model types (a helper process, say), so that starting it is never charged to
        the first model type's --timeout. Nothing to do by default."""

    @abc.abstractmethod
    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        """Yield the results of this check for one model type."""

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        """The rows of this check for a model type that could not be built at all.

        Also what the pool writes when a worker dies (crash, timeout, oom) before the check
        finished, so the matrix has the same cells whatever happened.
        """
        return [Result.failed(case.model_type, self.name, failure)]


class CaseContext:
    """What the checks of one model type share inside a worker: its config and meta model.

    Made lazily and dropped after the model type, so one type never sees another's objects.
    """

    def __init__(self, case: ModelCase, options: Options) -> None:
        self.case = case
        self.options = options
        self._config: object = None
        self._model: object = None
        self._failure: BaseException | None = None
        self._config_failure: BaseException | None = None
        self._constructions = None
        self._engine_notes: dict[str, object] = {}

    def config(self):
        """The model type's default config; for a case of `--remote-code DIR`, the directory's
        config, loaded with trust_remote_code=True; for a `--checkpoint DIR`, its config.json as
        it is (never remote code)."""
        from auditor.models.meta import load_checkpoint_config, make_config
        from auditor.remote.twin import load_remote_config

        if self._config_failure is not None:
            raise self._config_failure
        if self._config is None:
            try:
                remote = self.case.remote_code
                self._config = (load_remote_config(remote) if remote
                                else load_checkpoint_config(self.case.checkpoint) if self.case.checkpoint
                                else make_config(self.case.model_type))
            except BaseException as exc:
                self._config_failure = exc
                raise
        return self._config

    def plain_failure(self) -> Failure | None:
        """None when the default config and the plain meta build both work."""
        try:
            self.config()
        except Exception as exc:
            return classify(exc, Phase.CONFIG)
        try:
            self.model()
        except Exception as exc:
            return classify(exc)
        return None

    def model(self):
        """The plain meta-built model, built once; re-raises the build's failure each time."""
        from auditor.models.construction_log import constructions
        from auditor.models.meta import build_on_meta

        if self._failure is not None:
            raise self._failure
        if self._model is None:
            config = self.config()
            try:
                with constructions() as log, contextlib.ExitStack() as stack:
                    # Engines that observe a build alike share one observer (one hook at a time on
                    # the config's attribute: a second would note the first as a reader).
                    seen: dict = {}
                    for engine in engines.all():
                        if engine.build.observe not in seen:
                            seen[engine.build.observe] = stack.enter_context(engine.build.observe())
                    notes = {engine.name: seen[engine.build.observe] for engine in engines.all()}
                    self._model = build_on_meta(config, trust_remote_code=bool(self.case.remote_code))
            except BaseException as exc:
                self._failure = exc
                raise
            self._constructions = log
            self._engine_notes = notes
        return self._model

    def engine_notes(self, engine: str):
        """What engine `engine` noted during the plain build (its BuildSettings.observe: for
        vLLM, who read the config's attention implementation); None when the build failed."""
        try:
            self.model()
        except Exception:
            return None
        return self._engine_notes[engine]

    def constructions(self):
        """The plain build's ConstructionLog (auditor.models.construction_log): what the decorate
        check replays its policies on instead of building again."""
        self.model()
        return self._constructions
