"""What vLLM really serves: its own `get_model` with `model_impl="auto"` (needs vLLM).

vLLM picks per architecture: its own (native) class where its registry has one, the
Transformers backend otherwise (registry.py `_TRANSFORMERS_SUPPORTED_MODELS` sends some
architectures to the backend even so), or nothing. As vLLM's own initialization test does
(tests/models/test_initialization.py: one architecture per type, dummy weights), each type's
default config is given one architecture: transformers' causal-LM class for the type where it
has one, else its image-text-to-text or vision-to-sequence class, else its AutoModel class (which
vLLM serves as a pooling model where it serves it at all), written into `config.json`, and built
by `ModelConfig(model_impl="auto")`, `LoadConfig(load_format="dummy", device="meta")` on the
one-process group constructor.py makes.

Where it stops is judged by the one fault rule (auditor.core.status.classify at Phase.ENGINE): the
registry refusing the architecture (vLLM's); raised in vLLM's model code (vLLM's), in
transformers' code (the pairing's); a meta-device or missing-kernel limit (`undecided`, this
machine's). What a config.json alone cannot give vLLM before it constructs (a processor's files)
is an environment limit too; anything else ModelConfig raises is judged by the same rule.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import traceback
from dataclasses import dataclass

from auditor.core.fault import Fault
from auditor.core.status import Failure, Phase, Status, classify, message_of, signature_of
from auditor.engines.vllm.constructor import _REGISTRY, _causes, _distributed, classes_restored
from auditor.engines.vllm.releases import followed
from auditor.engines.vllm.shims import applied, config_shims

# transformers' mappings, in the order a type's architecture is taken from them (the first that
# has the type); the last, the AutoModel class, is what a default config names when it names none.
ARCHITECTURE_MAPPINGS = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
                         "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES", "MODEL_MAPPING_NAMES")
NATIVE = "native"
BACKEND = "Transformers backend"


@dataclass(frozen=True)
class Served:
    """What vLLM's get_model made of a type: `impl` (NATIVE, BACKEND, or "" where it stopped
    before it picked one), `served` the class it built, `architecture` the one it was given;
    `failure` where it stopped (None: it constructed)."""

    architecture: str
    impl: str = ""
    served: str = ""
    failure: Failure | None = None
    stage: str = ""  # where it stopped: "ModelConfig", "get_model", "after the constructor"

    @property
    def status(self) -> Status:
        return Status.BUILD if self.failure is None else self.failure.status

    @property
    def message(self) -> str:
        if self.failure is not None:
            return self.failure.message
        return f"servable: native {self.served}" if self.impl == NATIVE else f"servable: {BACKEND} ({self.served})"

    def extras(self) -> dict:
        found = {"architecture": self.architecture, "impl": self.impl, "served": self.served, "stage": self.stage}
        if self.failure is not None:
            found.update(self.failure.extras)
        return {**{k: v for k, v in found.items() if v}, **applied()}


def outcome(case, context) -> tuple[Status, str, dict] | Failure:
    """The engine's `serves` (auditor.engines.interface.Engine): `serve` on the case's config, as
    a row's outcome."""
    config = context.config()
    classes = () if context.plain_failure() is not None else tuple({type(m): None for m in context.model().modules()})
    served = serve(config, case.model_type, classes, trust_remote_code=bool(case.remote_code))
    if served.failure is None:
        return Status.BUILD, served.message, served.extras()
    return dataclasses.replace(served.failure, extras=served.extras())


def architecture_for(model_type: str) -> tuple[str, str]:
    """(architecture, mapping it came from) for `model_type`; ("", "") where transformers maps
    it to no model class."""
    from transformers.models.auto import modeling_auto

    for name in ARCHITECTURE_MAPPINGS:
        arch = getattr(modeling_auto, name, {}).get(model_type)
        if isinstance(arch, (tuple, list)):
            arch = arch[0] if arch else None
        if arch:
            return arch, name
    return "", ""


def serve(config, model_type: str, classes=(), trust_remote_code: bool = False) -> Served:
    """vLLM's get_model(model_impl="auto") on `config` with its type's architecture (see the
    module's docstring); the `classes` of the plain build put back as they were after it."""
    with classes_restored(classes):
        return _serve(config, model_type, trust_remote_code)


def _serve(config, model_type: str, trust_remote_code: bool) -> Served:
    from vllm.config import DeviceConfig, LoadConfig, ModelConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.model_loader import get_model

    arch = (getattr(config, "architectures", None) or [None])[0] or architecture_for(model_type)[0]
    if not arch:
        return Served("", failure=Failure.because(Status.SKIPPED, "no architecture: transformers maps this type "
                                                                  "to no model class"))
    try:
        _distributed()
    except Exception as exc:
        return Served(arch, failure=_environment(f"vLLM's process group: {message_of(exc)}"), stage="setup")
    _warm_registry()
    directory = tempfile.mkdtemp(prefix="auditor-vllm-native-")
    before = getattr(config, "architectures", None)
    try:
        config.architectures = [arch]
        config.to_json_file(os.path.join(directory, "config.json"))
        try:
            model_config = ModelConfig(model=directory, model_impl="auto", skip_tokenizer_init=True,
                                       dtype="float32", trust_remote_code=trust_remote_code)
            with config_shims():
                vllm_config = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"),
                                         load_config=LoadConfig(load_format="dummy", device="meta"))
        except Exception as exc:
            return Served(arch, failure=_before(exc), stage="ModelConfig")
        impl = BACKEND if model_config.using_transformers_backend() else NATIVE
        with set_current_vllm_config(vllm_config):
            try:
                model = get_model(vllm_config=vllm_config)
            except Exception as exc:
                after = any(f.name in ("load_weights", "process_weights_after_loading")
                            for f in traceback.extract_tb(exc.__traceback__))
                failure = classify(exc, Phase.ENGINE, engine_package="vllm")
                return Served(arch, impl, failure=failure, stage="after the constructor" if after else "get_model")
        served = type(model).__name__
        impl = BACKEND if served in followed().backend_classes else NATIVE
        return Served(arch, impl, served)
    finally:
        with contextlib.suppress(Exception):
            config.architectures = before
        shutil.rmtree(directory, ignore_errors=True)


_WARMED: list[bool] = []


def _warm_registry() -> None:
    """vLLM's own `ModelRegistry.fill_model_info_cache` (0.34.0 and later), once per process: a
    registry cache miss inspects the class in a subprocess of its own (about 12 s here), which
    this does for every native class in one (registry.py:1236-1253), kept in vLLM's cache
    directory for later runs. Best effort, as in vLLM."""
    if _WARMED:
        return
    _WARMED.append(True)
    from vllm.model_executor.models.registry import ModelRegistry

    fill = getattr(ModelRegistry, "fill_model_info_cache", None)
    if fill is not None:
        fill()


def _before(exc: BaseException) -> Failure:
    """ModelConfig or VllmConfig refusing: vLLM's registry refusing the architecture is vLLM's
    answer (`unsupported`); a file a config.json alone cannot give it (a processor's, read with
    an OSError) is this machine's input, not the model's; anything else is judged by the one
    fault rule, as a step of the engine's."""
    for cause in _causes(exc):
        if any(f.filename.endswith(_REGISTRY) for f in traceback.extract_tb(cause.__traceback__)):
            message = message_of(cause)
            return Failure(Status.UNSUPPORTED, message, signature_of(message), Fault.ENGINE, {"stage": "registry"})
    if any(isinstance(cause, OSError) or "processor" in str(cause).lower() for cause in _causes(exc)):
        return _environment(f"before vLLM's constructor: {message_of(exc)}")
    innermost = [c for c in _causes(exc) if c.__traceback__ is not None][-1:] or [exc]
    return classify(innermost[0], Phase.ENGINE, engine_package="vllm")


def _environment(text: str) -> Failure:
    message = f"environment limit ({text})"
    return Failure(Status.UNDECIDED, message, signature_of(message), Fault.ENVIRONMENT)
