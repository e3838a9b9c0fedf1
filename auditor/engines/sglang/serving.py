"""What SGLang really builds: its own model loader on each type, as its server does with
`--model-impl transformers` (needs SGLang; on a machine without a GPU, SGLang's own switch
`SGLANG_USE_CPU_ENGINE=1` and the shims of shims.py).

The type's default config names its architecture as the backend's gates give it
(gates.sglang_config: a checkpoint's `architectures[0]`, the AutoModel class for a default
config) and is written to a temporary directory as `config.json`; then SGLang's own steps, in its
server's order: `ServerArgs(model_impl="transformers", load_format="dummy", device="cpu")`,
published as the process's runtime context; `ModelConfig.from_server_args`; `get_model_loader`
(the dummy loader) and its `load_model`, which resolves the class (`get_model_architecture`,
srt/model_loader/utils.py) and runs its `__init__` (`_initialize_model`, srt/model_loader/loader.py)
on SGLang's parallel state: a one-process gloo group made once per worker (`warm_up`, by SGLang's
own `_init_parallel_groups`, srt/distributed/bootstrap.py:304-345).

The model is built on the meta device (shims `meta-device`, `dummy-weights`), so that a default
config of billions of parameters costs no memory. Where the meta device itself stops SGLang's
code (a tensor copied out of meta), the type's tiny config (auditor.models.tiny: the same classes,
shrunk sizes) is built on the CPU with no shim but `sgl-kernel`, and taken only where it
constructs (a stop of the tiny config could be the shrinking's): the row says so (extras
`built_on`, `meta_limit`, or `tiny_on_cpu`).

The verdict, judged by the one fault rule (auditor.core.classifier.classify at Phase.ENGINE, package
`sglang`): `build` with "servable: Transformers backend (X)", or where it stopped, with SGLang's
step (extras `step`: parallel state, server args, model config, registry, constructor, weights;
`step_at`: where the release record has it) and the file:line of SGLang's frame that raised;
`undecided` only for this machine's limits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import socket
import tempfile
import traceback
from dataclasses import dataclass, field

from auditor.core.classifier import Phase, classify
from auditor.core.messages import message_of
from auditor.core.status import Failure, Status
from auditor.engines.sglang import shims
from auditor.engines.sglang.gates import sglang_config
from auditor.engines.sglang.releases import RELEASE

PACKAGE = "sglang"
BACKEND = "Transformers backend"
# SGLang's steps where a serves row can stop, in its order (the row's `step`).
SETUP, SERVER_ARGS, MODEL_CONFIG, REGISTRY, CONSTRUCTOR, WEIGHTS = (
    "parallel state", "server args", "model config", "registry", "constructor", "weights")
TINY_ON_CPU = "cpu, from its tiny config (the meta device cannot finish it)"
# Functions of SGLang's whose frame names the step (innermost wins), srt/model_loader/.
_STEP_OF_FUNCTION = {"get_model_architecture": REGISTRY, "resolve_transformers_arch": REGISTRY,
                     "_initialize_model": CONSTRUCTOR, "initialize_dummy_weights": WEIGHTS,
                     "post_load_weights": WEIGHTS, "process_weights_after_loading": WEIGHTS,
                     "load_weights_only": WEIGHTS, "load_weights": WEIGHTS, "postprocess_weights": WEIGHTS}
_MADE: set[str] = set()
# What SGLang's modules registered with transformers' auto classes (mapping id -> {key: value}):
# applied while SGLang builds, taken away after (registrations_scoped).
_REGISTERED: dict[int, dict] = {}
_MISSING = object()


@dataclass(frozen=True)
class SglangBuild:
    """What SGLang's loader made of a type: `served` the class it built (failure None), or where
    it stopped."""

    architecture: str
    served: str = ""
    failure: Failure | None = None
    step: str = ""
    shims: tuple[str, ...] = ()
    built_on: str = ""
    meta_limit: str = ""
    tiny_on_cpu: str = ""
    notes: dict = field(default_factory=dict)

    @property
    def message(self) -> str:
        return self.failure.message if self.failure is not None else f"servable: {BACKEND} ({self.served})"

    def extras(self) -> dict:
        found = {"architecture": self.architecture, "impl": BACKEND if self.served else "", "served": self.served,
                 "step": self.step, "step_at": _cited(self.step),
                 "model_impl": "transformers", "shims": list(self.shims),
                 "built_on": self.built_on, "meta_limit": self.meta_limit, "tiny_on_cpu": self.tiny_on_cpu}
        if self.failure is not None:
            found.update(self.failure.extras)
        return {k: v for k, v in found.items() if v}


def cpu_engine() -> None:
    """SGLang's own switch for a machine without a GPU, set before SGLang is imported."""
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")


def warm_up() -> None:
    """SGLang imported as its loader imports it, once per worker before its first type (seconds),
    and its one-process group made. Raises what SGLang raised (the first row reports it)."""
    cpu_engine()
    shims.sgl_kernel()
    with registrations_scoped():
        import sglang.srt.model_loader  # noqa: F401  (the loader's import chain)
        import sglang.srt.models.transformers  # noqa: F401

        process_group()


def shims_in_use() -> dict[str, str]:
    """The engine's `shims()`: of those the release record names, the meta device's two (every
    build) and sgl-kernel where the real one does not import here."""
    cpu_engine()
    shims.sgl_kernel()
    found = {**shims.in_use(), **{name: shims.NAMES[name] for name in (shims.META_DEVICE, shims.DUMMY_WEIGHTS)}}
    return {name: text for name, text in found.items() if name in RELEASE.shims}


def process_group() -> None:
    """SGLang's parallel state for one process on the CPU: its runtime context published for one
    rank and its own `_init_parallel_groups` on a gloo group, once per process."""
    if "process group" in _MADE:
        return
    from sglang.srt.distributed import bootstrap
    from transformers import LlamaConfig

    # ServerArgs reads a checkpoint's config.json; the groups depend on none of it (one rank).
    directory = tempfile.mkdtemp(prefix="auditor-sglang-group-")
    try:
        LlamaConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                    num_key_value_heads=4, vocab_size=128, architectures=["LlamaForCausalLM"]).to_json_file(os.path.join(directory, "config.json"))
        server_args = _publish(_server_args(directory))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        bootstrap._init_parallel_groups(backend="gloo", dist_init_method=f"tcp://127.0.0.1:{port}",
                                        server_args=server_args, gpu_id=0)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    _MADE.add("process group")


def _server_args(directory: str, load_format: str = "dummy"):
    from sglang.srt.server_args import ServerArgs

    return ServerArgs(model_path=directory, device="cpu", load_format=load_format, model_impl="transformers",
                      skip_tokenizer_init=True, dtype="float32", trust_remote_code=True)


def _publish(server_args):
    from sglang.srt.runtime_context import SpawnRanks, publish

    publish(server_args, role="scheduler", ranks=SpawnRanks(world_rank=0, gpu_id=0))
    return server_args


def outcome(case, context) -> tuple[Status, str, dict] | Failure:
    """The engine's `serves` (auditor.engines.interface.Engine): `serve` on the case's config."""
    served = serve(context.config(), case.model_type)
    if served.failure is None:
        return Status.BUILD, served.message, served.extras()
    return dataclasses.replace(served.failure, extras=served.extras())


def serve(config, model_type: str) -> SglangBuild:
    """SGLang's loader on `config` (see the module's docstring): on meta, else its tiny config on the CPU."""
    own = sglang_config(config, model_type)
    if own is None:
        return SglangBuild("", failure=Failure.because(Status.SKIPPED, "no architecture: transformers maps this type "
                                                                  "to no model class"))
    served = _serve(own, meta=True)
    if not _meta_limit(served):
        return served
    from auditor.models.tiny import ShrinkError, shrink

    try:
        tiny = sglang_config(shrink(config), model_type)
    except ShrinkError as exc:
        return dataclasses.replace(served, tiny_on_cpu=f"not tried: {exc}")
    cpu = _serve(tiny, meta=False)
    if cpu.failure is None:
        return dataclasses.replace(cpu, built_on=TINY_ON_CPU, meta_limit=served.message)
    return dataclasses.replace(served, tiny_on_cpu=f"{cpu.step or 'failed'}: {cpu.message}")


def _meta_limit(served: SglangBuild) -> bool:
    """Whether the meta device, not SGLang, stopped it."""
    if served.failure is None or served.step == SETUP:
        return False
    message = served.failure.message.lower()
    return served.failure.status is Status.UNDECIDED or "meta tensor" in message or "meta device" in message


def _serve(config, meta: bool) -> SglangBuild:
    directory = tempfile.mkdtemp(prefix="auditor-sglang-")
    try:
        config.to_json_file(os.path.join(directory, "config.json"))
        return load_folder(directory, config.architectures[0], meta=meta)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def load_folder(directory: str, arch: str, meta: bool, load_format: str = "dummy") -> SglangBuild:
    """SGLang's steps on the model folder `directory` (its config.json written): its parallel
    state, ServerArgs with `load_format` ("dummy" for the serves row; "safetensors" for the
    weights row, loading.py), ModelConfig, the loader and its load_model; on the meta device
    (shims `meta-device`, `dummy-weights`) or the CPU."""
    used = tuple(sorted(shims.in_use()))
    try:
        cpu_engine()
        shims.sgl_kernel()
        with registrations_scoped():
            process_group()
    except Exception as exc:
        return SglangBuild(arch, failure=_environment(f"SGLang's parallel state: {message_of(exc)}"), step=SETUP, shims=used)
    step = SERVER_ARGS
    try:
        with registrations_scoped(), shims.on_meta() if meta else contextlib.nullcontext() as device:
            from sglang.srt.configs.device_config import DeviceConfig
            from sglang.srt.configs.load_config import LoadConfig
            from sglang.srt.configs.model_config import ModelConfig
            from sglang.srt.model_loader import get_model_loader

            server_args = _publish(_server_args(directory, load_format))
            step = MODEL_CONFIG
            model_config = ModelConfig.from_server_args(server_args)
            step = REGISTRY
            loader = get_model_loader(LoadConfig(load_format=load_format), model_config)
            device_config = DeviceConfig(device="cpu")
            if meta:
                device_config.device = device  # DeviceConfig refuses "meta" (shim `meta-device`)
                used = tuple(sorted({*used, shims.META_DEVICE, *((shims.DUMMY_WEIGHTS,) if load_format == "dummy"
                                                                  else ())}))
            model = loader.load_model(model_config=model_config, device_config=device_config)
        return SglangBuild(arch, type(model).__name__, shims=used)
    except Exception as exc:
        failure = classify(exc, Phase.ENGINE, engine_package=PACKAGE)
        return SglangBuild(arch, failure=failure, step=step_of(exc, step), shims=used)
    finally:
        with contextlib.suppress(Exception):
            import gc

            gc.collect()


def step_of(exc: BaseException, reached: str) -> str:
    """SGLang's step `exc` was raised in: the innermost of its loader's functions in the
    traceback, else the step the caller had reached (`reached`)."""
    step = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        step = _STEP_OF_FUNCTION.get(frame.name, step)
    return step or reached


def _environment(text: str) -> Failure:
    from auditor.core.fault import Fault
    from auditor.core.messages import signature_of

    message = f"environment limit ({text})"
    return Failure(Status.UNDECIDED, message, signature_of(message), Fault.ENVIRONMENT)


def _cited(step: str) -> str:
    """Where the release record has SGLang's `step`: "sglang/srt/model_loader/loader.py:285-312 (...)"."""
    at = dict(RELEASE.loader).get(step, "")
    return f"{RELEASE.package}/{at}" if at else ""


def _auto_mappings() -> list:
    """transformers' auto registries: its config mapping and every model class mapping."""
    from transformers.models.auto import configuration_auto, modeling_auto

    return [configuration_auto.CONFIG_MAPPING,
            *(value for value in vars(modeling_auto).values() if hasattr(value, "_extra_content")
              and type(value).__name__ == "_LazyAutoMapping")]


@contextlib.contextmanager
def registrations_scoped():
    """SGLang's registrations with transformers' auto classes in force only in the block. SGLang's
    modules register classes of their own when imported (`AutoModel.register(Gemma3nTextConfig,
    Gemma3nForCausalLM)`, srt/models/gemma3n_causal.py:1016; its config classes,
    srt/utils/hf_transformers/common.py:284-320): in SGLang's server they are in force, so its
    loader builds with them; in a worker they would turn every later plain build of those types
    (the build, backend and compile checks') into SGLang's. Kept here (`_REGISTERED`), put back
    around each of SGLang's builds, taken away after."""
    mappings = _auto_mappings()
    before = [dict(m._extra_content) for m in mappings]
    for mapping in mappings:
        mapping._extra_content.update(_REGISTERED.get(id(mapping), {}))
    try:
        yield
    finally:
        for mapping, saved in zip(mappings, before, strict=True):
            added = {k: v for k, v in mapping._extra_content.items() if saved.get(k, _MISSING) is not v}
            _REGISTERED.setdefault(id(mapping), {}).update(added)
            mapping._extra_content.clear()
            mapping._extra_content.update(saved)
