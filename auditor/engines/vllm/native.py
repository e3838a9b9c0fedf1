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

Where it stops is judged by the one fault rule (auditor.core.classifier.classify at Phase.ENGINE): the
registry refusing the architecture (vLLM's); raised in vLLM's model code (vLLM's), in
transformers' code (the pairing's); a meta-device or missing-kernel limit (`undecided`, this
machine's). A multimodal type's processor files are written beside its config.json
(auditor.models.processor_files: its processor's defaults and a tiny tokenizer, which vLLM loads
as a checkpoint's); where they cannot be made, what vLLM cannot read without them is an
environment limit; anything else ModelConfig raises is judged by the same rule. A kernel of
vLLM's CPU wheel that the meta device never needs is stood in for (shims.py); the row names it.
Where the meta device itself stops vLLM's code (a tensor copied out of meta, `.item()` on meta:
bloom, apertus), the type's tiny config is built on the CPU instead (`_on_the_cpu`), and a row
that constructs there says so (extras `built_on`, `meta_limit`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import traceback
from dataclasses import dataclass

from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import message_of, signature_of
from auditor.core.status import Failure, Status
from auditor.engines.vllm.constructor import _REGISTRY, _causes, classes_restored
from auditor.engines.vllm.preparation import inspection_retried, model_info_cache, process_group
from auditor.engines.vllm.releases import followed
from auditor.engines.vllm.shims import applied, config_shims, kernel_shims
from auditor.models import processor_files
from auditor.models.served import architecture_for

NATIVE = "native"
BACKEND = "Transformers backend"
# vLLM's steps where a serves row can stop, in its order (the row's `step`; the where-they-stop
# table splits serves/vllm by them): its process group; ModelConfig, whose registry refuses an
# architecture; get_model's constructor, or one of vLLM's layers it builds ("layer <module>",
# model_executor/layers/<module>); the loader's weight processing after the constructor returned.
SETUP, MODEL_CONFIG, REGISTRY, CONSTRUCTOR, WEIGHTS = "setup", "model config", "registry", "constructor", "weights"
# Where a row was built when the meta device could not finish it (the row's `built_on`)
TINY_ON_CPU = "cpu, from its tiny config (the meta device cannot finish it)"
_LAYERS = os.path.join("vllm", "model_executor", "layers", "")
_AFTER = frozenset({"load_weights", "process_weights_after_loading"})  # model_loader/base_loader.py:88-122


@dataclass(frozen=True)
class Served:
    """What vLLM's get_model made of a type: `impl` (NATIVE, BACKEND, or "" where it stopped
    before it picked one), `served` the class it built, `architecture` the one it was given;
    `failure` where it stopped (None: it constructed)."""

    architecture: str
    impl: str = ""
    served: str = ""
    failure: Failure | None = None
    step: str = ""  # vLLM's step it stopped at (SETUP ... WEIGHTS; a layer's: "layer fused_moe"); the row's `step`
    shims: frozenset[str] = frozenset()  # the kernel shims its get_model used (shims.py)
    files: processor_files.ProcessorFiles = processor_files.ProcessorFiles()  # written beside config.json
    # the architectures vLLM's registry inspected in-process after its subprocess failed (preparation.py)
    inspected_in_process: tuple[str, ...] = ()
    # Where the meta device could not finish it: built from its tiny config on the CPU instead
    # (`built_on`, and the meta device's `meta_limit`), or why that did not decide it either (`tiny_on_cpu`).
    built_on: str = ""
    meta_limit: str = ""
    tiny_on_cpu: str = ""

    @property
    def status(self) -> Status:
        return Status.BUILD if self.failure is None else self.failure.status

    @property
    def message(self) -> str:
        if self.failure is not None:
            return self.failure.message
        return f"servable: native {self.served}" if self.impl == NATIVE else f"servable: {BACKEND} ({self.served})"

    def extras(self) -> dict:
        found = {"architecture": self.architecture, "impl": self.impl, "served": self.served, "step": self.step,
                 "inspected_in_process": list(self.inspected_in_process), "built_on": self.built_on,
                 "meta_limit": self.meta_limit, "tiny_on_cpu": self.tiny_on_cpu}
        if self.failure is not None:
            found.update(self.failure.extras)
        return {**{k: v for k, v in found.items() if v}, **self.files.extras(), **applied(self.shims)}


def outcome(case, context) -> tuple[Status, str, dict] | Failure:
    """The engine's `serves` (auditor.engines.interface.Engine): `serve` on the case's config, as
    a row's outcome."""
    config = context.config()
    classes = () if context.plain_failure() is not None else tuple({type(m): None for m in context.model().modules()})
    served = serve(config, case.model_type, classes, trust_remote_code=bool(case.remote_code))
    if served.failure is None:
        return Status.BUILD, served.message, served.extras()
    return dataclasses.replace(served.failure, extras=served.extras())


def serve(config, model_type: str, classes=(), trust_remote_code: bool = False) -> Served:
    """vLLM's get_model(model_impl="auto") on `config` with its type's architecture (see the
    module's docstring); the `classes` of the plain build put back as they were after it."""
    with classes_restored(classes), inspection_retried() as retried:
        served = _serve(config, model_type, trust_remote_code)
        if _meta_limit(served):
            served = _on_the_cpu(config, model_type, trust_remote_code, served)
    return dataclasses.replace(served, inspected_in_process=tuple(retried)) if retried else served


def _meta_limit(served: Served) -> bool:
    """Whether the meta device, not vLLM, stopped it: a tensor copied out of meta, or `.item()` on
    meta (a kernel the wheel lacks is not one: the CPU lacks it too)."""
    return served.status is Status.UNDECIDED and "meta tensor" in served.message.lower()


def _on_the_cpu(config, model_type: str, trust_remote_code: bool, meta: Served) -> Served:
    """vLLM's get_model on the type's tiny config (auditor.models.tiny: the same classes, shrunk
    sizes) on the CPU, dummy weights really allocated: where the meta device stopped vLLM's code
    (bloom's ALiBi slopes copied out of a tensor at construction, `.item()` on a meta tensor),
    the CPU lets it run to its end. Its verdict is taken only where it constructs: a stop of the
    tiny config could be the shrinking's, not the type's, so the row stays `undecided` and says
    what the CPU attempt met."""
    from auditor.models.tiny import ShrinkError, shrink

    try:
        tiny = shrink(config)
    except ShrinkError as exc:
        return dataclasses.replace(meta, tiny_on_cpu=f"not tried: {exc}")
    cpu = _serve(tiny, model_type, trust_remote_code, device="cpu")
    if cpu.failure is None:
        return dataclasses.replace(cpu, built_on=TINY_ON_CPU, meta_limit=meta.message)
    return dataclasses.replace(meta, tiny_on_cpu=f"{cpu.step or 'failed'}: {cpu.message}")


def _serve(config, model_type: str, trust_remote_code: bool, device: str = "meta") -> Served:
    arch = (getattr(config, "architectures", None) or [None])[0] or architecture_for(model_type)[0]
    if not arch:
        return _no_architecture()
    directory = tempfile.mkdtemp(prefix="auditor-vllm-native-")
    before = getattr(config, "architectures", None)
    try:
        config.architectures = [arch]
        config.to_json_file(os.path.join(directory, "config.json"))
        return _get_model(directory, arch, model_type, trust_remote_code, load_format="dummy", device=device)
    finally:
        with contextlib.suppress(Exception):
            config.architectures = before
        shutil.rmtree(directory, ignore_errors=True)


def load_checkpoint(directory, model_type: str, trust_remote_code: bool = False, device: str = "meta") -> Served:
    """vLLM's get_model with its safetensors loader (load_format="safetensors") onto `device`,
    on the checkpoint folder `directory` (its config.json and weight files; the processor files
    are written beside them where a multimodal type needs them): loading.py's row."""
    import json

    with open(os.path.join(directory, "config.json"), encoding="utf-8") as handle:
        architectures = json.load(handle).get("architectures") or [None]
    arch = architectures[0] or architecture_for(model_type)[0]
    if not arch:
        return _no_architecture()
    return _get_model(str(directory), arch, model_type, trust_remote_code, load_format="safetensors", device=device)


def _no_architecture() -> Served:
    return Served("", failure=Failure.because(Status.SKIPPED, "no architecture: transformers maps this type "
                                                              "to no model class"))


def _get_model(directory: str, arch: str, model_type: str, trust_remote_code: bool, *, load_format: str,
               device: str) -> Served:
    """vLLM's steps on the model folder `directory` (config.json written): its process group,
    ModelConfig, VllmConfig, get_model with `load_format` onto `device`."""
    from vllm.config import DeviceConfig, LoadConfig, ModelConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.model_loader import get_model

    try:  # made by the worker's warm-up (preparation.py), before any cell's clock; here where it could not
        process_group()
    except Exception as exc:
        return Served(arch, failure=_environment(f"vLLM's process group: {message_of(exc)}"), step=SETUP)
    model_info_cache()
    files = processor_files.write(model_type, directory)  # as a checkpoint has them
    try:
        model_config = ModelConfig(model=directory, model_impl="auto", skip_tokenizer_init=not files.tokenizer,
                                   dtype="float32", trust_remote_code=trust_remote_code)
        with config_shims():
            vllm_config = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"),
                                     load_config=LoadConfig(load_format=load_format, device=device))
    except Exception as exc:
        return Served(arch, failure=_before(exc, files), step=MODEL_CONFIG, files=files)
    impl = BACKEND if model_config.using_transformers_backend() else NATIVE
    with set_current_vllm_config(vllm_config), kernel_shims() as used:
        try:
            model = get_model(vllm_config=vllm_config)
        except Exception as exc:
            failure = classify(exc, Phase.ENGINE, engine_package="vllm")
            return Served(arch, impl, failure=failure, step=step_of(exc), shims=frozenset(used), files=files)
    served = type(model).__name__
    impl = BACKEND if served in followed().backend_classes else NATIVE
    return Served(arch, impl, served, shims=frozenset(used), files=files)


def step_of(exc: BaseException) -> str:
    """The step of get_model `exc` was raised in (SETUP ... WEIGHTS): the weights' processing after the
    constructor, the innermost of vLLM's layers, or the constructor."""
    frames = traceback.extract_tb(exc.__traceback__)
    if any(f.name in _AFTER for f in frames):
        return WEIGHTS
    layers = [f.filename.split(_LAYERS, 1)[1] for f in frames if _LAYERS in f.filename]
    if layers:
        return f"layer {layers[-1].split(os.sep, 1)[0].removesuffix('.py')}"
    return CONSTRUCTOR


def _before(exc: BaseException, files: processor_files.ProcessorFiles) -> Failure:
    """ModelConfig or VllmConfig refusing: vLLM's registry refusing the architecture is vLLM's
    answer (`unsupported`); a file a config.json alone cannot give it (read with an OSError, or a
    processor's where none could be written) is this machine's input, not the model's; anything
    else is judged by the one fault rule, as a step of the engine's: vLLM's own refusal of the
    processor class written beside it (InstructBlipVideoProcessor "exposes no image, video or
    audio processor", models/transformers/multimodal.py:154-159) is the class's, as it would be
    with a checkpoint's files."""
    for cause in _causes(exc):
        if any(f.filename.endswith(_REGISTRY) for f in traceback.extract_tb(cause.__traceback__)):
            message = message_of(cause)
            return Failure(Status.UNSUPPORTED, message, signature_of(message), Fault.ENGINE, {"step": REGISTRY})
    if any(isinstance(cause, OSError) or (not files.files and "processor" in str(cause).lower())
           for cause in _causes(exc)):
        return _environment(f"before vLLM's constructor: {message_of(exc)}")
    innermost = [c for c in _causes(exc) if c.__traceback__ is not None][-1:] or [exc]
    return classify(innermost[0], Phase.ENGINE, engine_package="vllm")


def _environment(text: str) -> Failure:
    message = f"environment limit ({text})"
    return Failure(Status.UNDECIDED, message, signature_of(message), Fault.ENVIRONMENT)
