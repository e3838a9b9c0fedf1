"""The backend check's gates computed by vLLM's own functions (needs vLLM; the `vllm` policy).

Where vLLM's function can be called on its own it is: the registry's
`_try_resolve_transformers` and `ModelConfig._get_transformers_backend_cls` (on a stand-in
ModelConfig carrying only what they read), vLLM's text-config and experts helpers, its registry
of backend classes, `can_enable_torch_compile`, `AttentionFuser.match/validate/layer_index`,
`replace_linear_class`'s style check through vLLM's own error, and `Base.check_version`.
What needs a whole `Base` (a distributed group, a VllmConfig, a GPU) is not called: the walk
over the modules and the pipeline-parallel split are the emulation's (plans.py),
with vLLM's pieces plugged in. The build is the emulation's too (vLLM's build needs its engine).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from auditor.core.messages import message_of
from auditor.engines.interface import Verdict
from auditor.engines.vllm import plans
from auditor.engines.vllm.attention import Dispatch, layers_verdict
from auditor.engines.vllm.gates import architecture, default_max_model_len


def _verdict(ok: bool, message: str = "", extras: dict | None = None) -> Verdict:
    return Verdict(ok, message, extras or {})


def registry_gate(config, model_type: str, model_cls: type | None = None):
    from vllm.config.model import ModelConfig
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.transformers_utils.config import get_hf_text_config
    from vllm.transformers_utils.model_arch_config_convertor import ModelArchConfigConvertorBase

    arch = architecture(config, model_type)
    if not arch:
        return _verdict(False, "ValueError: No model architectures are specified")
    extras = {"architecture": arch}
    try:
        text = get_hf_text_config(config)
        experts = ModelArchConfigConvertorBase(config, text).get_num_experts()
        stand_in = SimpleNamespace(hf_config=config, hf_text_config=text, is_moe=experts > 0,
                                   architectures=[arch], runner="auto", model="", revision=None,
                                   code_revision=None, trust_remote_code=False, model_impl="transformers")
        stand_in._get_transformers_backend_cls = ModelConfig._get_transformers_backend_cls.__get__(stand_in)
        name = ModelRegistry._try_resolve_transformers(arch, stand_in)
    except Exception as exc:
        return _verdict(False, message_of(exc), extras)
    module = __import__("transformers").__dict__.get(arch) or model_cls
    if module is not None:
        extras["model_class"] = module.__name__
    exists = name in ModelRegistry.models
    extras.update(backend_class=name, backend_class_exists=exists)
    if not exists:
        return _verdict(False, f"ValueError: Model architectures [{arch!r}] are not supported for now "
                               f"(vLLM has no Transformers backend class {name})", extras)
    return _verdict(True, name, extras)


def enable_if_gate(config):
    from vllm.model_executor.models.transformers.utils import can_enable_torch_compile

    model_config = SimpleNamespace(hf_config=config, max_model_len=default_max_model_len(config))
    try:
        enabled = can_enable_torch_compile(SimpleNamespace(model_config=model_config))
    except Exception as exc:
        return _verdict(False, message_of(exc))
    return _verdict(True, "compile enabled" if enabled else "compile disabled (dynamic rope)",
                    {"compile_enabled": bool(enabled)})


def _vllm_refuses_style(child, style, qual: str) -> str | None:
    """replace_linear_class's own check, which raises before it builds anything."""
    from vllm.model_executor.models.transformers.utils import replace_linear_class

    try:
        replace_linear_class(child, style, None, prefix=qual)
    except ValueError as exc:
        return message_of(exc)
    return None


tp_plan_gate = functools.partial(plans.tp_plan_gate, refuse_style=_vllm_refuses_style)


def attention_gate(model, vllm_config):
    from vllm.model_executor.models.transformers.fusers.attention import AttentionFuser

    def dispatching():
        for qual, child, _ in plans.walk(model, plans.vocab_embeddings(model, vllm_config)):
            fuser = AttentionFuser.match(None, child)
            if fuser is None or not fuser.validate(child, None):
                continue
            index = fuser.layer_index(child)
            if index is not None:
                yield Dispatch(qual, index, functools.partial(fuser.scale, child),
                               functools.partial(fuser.sinks, child))

    return layers_verdict(dispatching(), vllm_config)


def version_gate(feature: str, floor: str, installed: str):
    from vllm.model_executor.models.transformers.base import Base

    try:
        Base.check_version(floor, feature)  # reads transformers.__version__ itself
    except ImportError as exc:
        return _verdict(False, message_of(exc))
    return _verdict(True, f"transformers {installed} >= {floor}")


def decorate_gate(model):
    """vLLM's `support_torch_compile` with the decoder's arguments (base.py:288-308), applied to a
    throwaway subclass named as the decoder (vLLM would decorate the class itself, for good)."""
    from vllm.compilation.decorators import DynamicArgDims, support_torch_compile
    from vllm.model_executor.models.transformers.utils import can_enable_torch_compile

    cls = type(model.get_decoder())
    stand_in = type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    dims = DynamicArgDims(input_ids=1, inputs_embeds=1, position_ids=-1)
    try:
        support_torch_compile(dynamic_arg_dims=dims, enable_if=can_enable_torch_compile, is_encoder=False,
                              use_aot_compile=False)(stand_in)
    except (TypeError, ValueError) as exc:
        return _verdict(False, message_of(exc), {"decoder": cls.__name__})
    return _verdict(True, cls.__name__, {"decoder": cls.__name__})
