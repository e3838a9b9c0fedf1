"""vLLM's own constructor, whole: `get_model` builds the model vLLM would serve (the own-code
variant, policy `vllm`; needs vLLM, run with VLLM_TARGET_DEVICE=cpu on a machine without a GPU).

The default config is written to a temporary directory as `config.json`, beside the processor
files of a multimodal type (auditor.models.processor_files: its processor's defaults and a tiny
tokenizer, which vLLM then loads as a checkpoint's), and vLLM makes of it what it makes of a
checkpoint: `ModelConfig(model_impl="transformers", dtype="float32")`,
`LoadConfig(load_format="dummy", device="meta")` (vLLM's own load device: the layers it builds
hold meta tensors, so that a default config of billions of parameters costs no memory; its
dummy weights fill nothing), on a one-process gloo group made once per worker process
(`init_distributed_environment`, `initialize_model_parallel(1, 1)`: preparation.py, before the
worker's first model type).

Where it stops is read off the traceback: the step of `Base.__init__`
(vllm/model_executor/models/transformers/base.py:123-202) it was in names the gate
(`gate_of`). What fails outside the constructor (weight post-processing whose CPU kernels this
CUDA wheel lacks, e.g. `cpu_prepack_moe_weight` for MoE layers) is an environment limit:
recorded, never a verdict on the model. Where a kernel shim stands in for such a kernel on the
meta device (shims.py: `moe-prepack`), get_model runs to its end and the rows name the shim.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import traceback
from collections.abc import Iterator
from dataclasses import dataclass

from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import message_of
from auditor.core.status import Status
from auditor.engines.vllm.preparation import inspection_retried, process_group
from auditor.engines.vllm.releases import followed
from auditor.engines.vllm.shims import config_shims, kernel_shims
from auditor.models import processor_files

_BACKEND_DIR = os.path.join("model_executor", "models", "transformers")
_REGISTRY = os.path.join("model_executor", "models", "registry.py")
# The step Base.__init__ was in (the function it called, base.py:173-197) -> the gate it is.
# Steps without a gate of their own stop vLLM at the gate of the step before them; the row
# says which step (extras `step`).
_STEPS = {
    "_patch_config": "build", "_decorate_for_torch_compile": "decorate", "_mark_model_components": "build",
    "__enter__": "build", "_create_model": "build", "_create_hf_to_vllm_mapper": "enable-if",
    "pipeline_parallel": "pp-plan", "disable_noop_dynamic_rope": "pp-plan", "recursive_replace": "tp-plan",
    "_create_attention_instances": "attention", "init_parameters": "attention", "keep_in_fp32": "attention",
}
_HIDDEN = "_pre_trained_model_classes"  # the cached property the throwaway build is made in
# Functions deeper in a step that move it to another gate: the throwaway build is the build,
# enable_if runs in the decorated decoder's __init__, attention fusion happens in recursive_replace.
_INNER = {_HIDDEN: "build", "can_enable_torch_compile": "enable-if",
          "register_fusion": "attention", "sinks": "attention"}
# The loader's steps after the constructor returned (model_loader/base_loader.py:88-109).
_AFTER = frozenset({"load_weights", "process_weights_after_loading"})


@dataclass(frozen=True)
class Construction:
    """What vLLM's get_model did: `gate` it stopped at with `message` (None: the constructor
    returned), `environment`: a limit of this machine met outside the constructor, `served`:
    the class vLLM built, `step`: where in the constructor it stopped."""

    gate: str | None = None
    message: str = ""
    environment: str = ""
    served: str = ""
    step: str = ""
    constructed: bool = False
    status: Status = Status.UNSUPPORTED  # the stopping gate's row: the build's failure keeps its own
    fault: Fault | None = None  # whose fault the stop is (the one rule, auditor.core.classifier.classify)
    shims: tuple[str, ...] = ()  # the kernel shims get_model used (shims.py)
    # the architectures vLLM's registry inspected in-process after its subprocess failed (preparation.py)
    inspected_in_process: tuple[str, ...] = ()

    def passed(self, gate: str, order: tuple[str, ...]) -> bool:
        """Whether vLLM's constructor ran `gate`'s step (one of `order`) and went on."""
        if gate not in order:
            return False
        if self.constructed:
            return True
        return self.gate in order and order.index(gate) < order.index(self.gate)


@contextlib.contextmanager
def classes_restored(classes) -> Iterator[None]:
    """Each class in `classes` as it was before the block. vLLM decorates the decoder class for
    good (base.py:288-293: support_torch_compile appends its wrapper to the class's bases and
    replaces its `__init__` and `__call__`, compilation/decorators.py:367-443, 765), which would
    make every later build of that class in this worker vLLM's. The bytecode hooks vLLM's compile
    wrapper registers for the instances it built (compilation/wrapper.py: one per instance, held
    for the life of the process) are removed too: left, every later dynamo compile in the worker
    meets them, and the compile check's next trial under vLLM's own wrapper recompiled at every
    length (3 graphs where vLLM's dispatch gives 1) after a constructor had run in its process."""
    saved = [(cls, dict(cls.__dict__), cls.__bases__) for cls in classes]
    hooks = _bytecode_hooks()
    before_hooks = set(hooks)
    try:
        yield
    finally:
        for key in [k for k in hooks if k not in before_hooks]:
            hooks.pop(key, None)
        for cls, before, bases in saved:
            if cls.__bases__ != bases:
                cls.__bases__ = bases
            for name in [n for n in cls.__dict__ if n not in before]:
                with contextlib.suppress(AttributeError, TypeError):
                    delattr(cls, name)
            for name, value in before.items():
                if cls.__dict__.get(name, _MISSING) is not value:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(cls, name, value)


_MISSING = object()


def _bytecode_hooks() -> dict:
    """dynamo's registered bytecode hooks (handle id -> hook; torch's private table, where
    `register_bytecode_hook` puts them), or an empty dict where this torch keeps none there."""
    from torch._dynamo import convert_frame

    hooks = getattr(convert_frame, "_bytecode_hooks", None)
    return hooks if isinstance(hooks, dict) else {}


def construct(config, classes=(), trust_remote_code: bool = False, plain_failed: bool = False) -> Construction:
    """vLLM's get_model on `config` (see the module's docstring), the `classes` its model is made
    of (those of the plain meta build) put back as they were after it. `plain_failed`: the plain
    meta build failed too, so a failed build is the model's own failure, not vLLM's meeting it."""
    with classes_restored(classes), inspection_retried() as retried:
        construction = _construct(config, trust_remote_code, plain_failed)
    return dataclasses.replace(construction, inspected_in_process=tuple(retried)) if retried else construction


def _construct(config, trust_remote_code: bool, plain_failed: bool) -> Construction:
    from vllm.config import DeviceConfig, LoadConfig, ModelConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.model_loader import get_model

    try:
        process_group()  # made by the worker's warm-up, before any cell's clock
    except Exception as exc:  # no process group on this machine: nothing of vLLM's can be built
        return Construction(environment=f"environment limit (vLLM's process group): {message_of(exc)}")
    directory = tempfile.mkdtemp(prefix="auditor-vllm-")
    try:
        config.to_json_file(os.path.join(directory, "config.json"))
        files = processor_files.write(config.model_type, directory)  # as a checkpoint has them
        try:
            model_config = ModelConfig(model=directory, model_impl="transformers",
                                       skip_tokenizer_init=not files.tokenizer,
                                       dtype="float32", trust_remote_code=trust_remote_code)
            with config_shims():
                vllm_config = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"),
                                         load_config=LoadConfig(load_format="dummy", device="meta"))
        except Exception as exc:
            # vLLM's registry refusing the architecture stops it there; anything else is what
            # a config.json alone cannot give it (a multimodal processor's files, say).
            for cause in _causes(exc):
                if any(f.filename.endswith(_REGISTRY) for f in traceback.extract_tb(cause.__traceback__)):
                    return Construction("registry", message_of(cause), step="ModelConfig")
            return Construction(environment=f"environment limit (before vLLM's constructor): {message_of(exc)}")
        if not model_config.using_transformers_backend():
            # The registry found no backend class for it and fell back on a model of vLLM's own
            # (registry.py:1400-1405, 1341-1365: `_normalize_arch` maps glm4v_moe's 'Glm4vMoeModel' to
            # vLLM's Glm4vMoeForConditionalGeneration): not the backend, whatever get_model does.
            return _served_by_vllm(model_config._model_info.architecture)
        with set_current_vllm_config(vllm_config), kernel_shims() as used:
            try:
                model = get_model(vllm_config=vllm_config)
            except AttributeError as exc:
                if _HIDDEN not in str(exc):
                    raise
                return _attributed(exc, _throwaway_failure(model_config), plain_failed)
        served = type(model).__name__
        if served not in followed().backend_classes:  # vLLM fell back on a model of its own: the backend refused it
            return _served_by_vllm(served)
        return Construction(served=served, constructed=True, shims=tuple(sorted(used)))
    except Exception as exc:
        return _attributed(exc, plain_failed=plain_failed)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        with contextlib.suppress(Exception):
            import gc
            gc.collect()


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it wraps: its chain, and the errors a pydantic ValidationError holds
    (ModelConfig is a pydantic dataclass: the registry's ValueError arrives inside one)."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack += [current.__cause__, current.__context__]
        with contextlib.suppress(Exception):
            stack += [e.get("ctx", {}).get("error") for e in current.errors()]


def _served_by_vllm(served: str) -> Construction:
    """A model vLLM serves with a class of its own: its registry, not the Transformers backend, took it."""
    return Construction("registry", f"vLLM serves it with its own {served}, not the Transformers backend",
                        served=served, step="ModelRegistry")


def _throwaway_failure(model_config) -> BaseException | None:
    """What vLLM's throwaway build raised (base.py:244-259), which reaches Base only as
    nn.Module.__getattr__'s AttributeError naming the property (Python drops the build's own
    exception on the way): the same build made again, of the config vLLM's failed constructor
    left patched (`_patch_config` ran before it, base.py:173-174). None: it builds here."""
    import torch
    from transformers import AutoModel

    try:
        with torch.device("meta"):
            AutoModel.from_config(config=model_config.hf_config, dtype=model_config.dtype,
                                  trust_remote_code=model_config.trust_remote_code)
    except Exception as exc:
        return exc
    return None


def _attributed(exc: BaseException, hidden: BaseException | None = None, plain_failed: bool = False) -> Construction:
    frames = traceback.extract_tb(exc.__traceback__)
    step = gate_of(frames)
    if step is None:
        # After the model was made (loading, post-processing weights), or before vLLM got to it.
        after = any(f.name in _AFTER for f in frames)
        where = "after vLLM's constructor" if after else "outside vLLM's constructor"
        return Construction(environment=f"environment limit ({where}): {message_of(exc)}", constructed=after)
    gate, where = step
    # A property that raises AttributeError (the throwaway build in the cached property
    # `_pre_trained_model_classes`, base.py:244-259) reaches Base as nn.Module.__getattr__'s own
    # AttributeError naming the property: Python drops the build's exception on the way.
    if isinstance(exc, AttributeError) and _HIDDEN in str(exc):
        gate = "build"
    # Judged by the one fault rule, as the emulation's rows are (meeting.py): at vLLM's step, or
    # the model's own failure where its plain build fails too.
    phase = Phase.BUILD if gate == "build" and plain_failed else Phase.ENGINE
    failure = classify(hidden or exc if gate == "build" else exc, phase, engine_package="vllm")
    return Construction(gate, failure.message, step=where, status=failure.status, fault=failure.fault)


def gate_of(frames) -> tuple[str, str] | None:
    """(gate, step) of the innermost call of Base.__init__ in `frames` (a traceback's frame
    summaries), or None when the exception was not raised inside it."""
    inits = [i for i, f in enumerate(frames)
             if f.name == "__init__" and f.filename.endswith(os.path.join(_BACKEND_DIR, "base.py"))]
    if not inits:
        # After Base.__init__ returned, in a backend class's own __init__ (the pooler of
        # pooling.py, the LM head of causal.py): past every gate's step, at the last.
        mixins = [f for f in frames if f.name == "__init__" and os.path.dirname(f.filename).endswith(_BACKEND_DIR)]
        return ("attention", f"{os.path.basename(mixins[-1].filename)}:{mixins[-1].lineno} __init__") if mixins else None
    start = inits[-1]
    below = frames[start + 1:]
    step = below[0].name if below else "__init__"
    where = f"base.py:{frames[start].lineno} {step}"
    if step == "__init__":  # raised in __init__ itself (base.py:200-202 reads text_config.hidden_size)
        return "attention", where
    gate = _STEPS.get(step, "attention")
    for frame in below:
        gate = _INNER.get(frame.name, gate)
    return gate, where
