"""What more than one engine does the same way, in one place (each engine's folder imports it;
an engine never imports another's).

* `architecture(config, model_type)`: the architecture an engine reads from a config (vLLM's
  hf_config.py:939-949; SGLang's config names the same).
* `reads_attention()` and `needs_own_build(...)`: the observation of the plain build that tells
  whether an engine's own build (its attention implementation) can differ from it.
* `init_on_device_without_buffers(device)`: vLLM's context manager (utils.py:51-91), which SGLang
  copies (transformers.py:166-186).
* `configs(config)`: a config and every sub-config under it, once each.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field


def architecture(config, model_type: str) -> str | None:
    """The architecture vLLM reads: the config's own, or, for a config without one (a default
    config), the AutoModel class name transformers maps its type to (hf_config.py:939-949)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    archs = getattr(config, "architectures", None)
    if archs:
        return archs[0]
    arch = MODEL_MAPPING_NAMES.get(getattr(config, "model_type", model_type))
    # A type with several AutoModel classes (funnel: FunnelModel, FunnelBaseModel): a checkpoint
    # names one, the first.
    return arch[0] if isinstance(arch, (tuple, list)) and arch else arch


_GENERIC = ("configuration_utils.py", "modeling_utils.py")
# transformers' own files that copy the config for every model (from_config's copy).
_COPIERS = ("configuration_utils.py", "modeling_utils.py", "auto_factory.py")
# Frames that only pass an attribute read on (the heterogeneity mixin's __getattribute__).
_ATTRIBUTE_HOOKS = frozenset({"__getattribute__", "__getattr__"})


@dataclass
class AttentionReads:
    """Files outside transformers' generic machinery that read `config._attn_implementation`."""

    files: set[str] = field(default_factory=set)


@contextlib.contextmanager
def reads_attention() -> Iterator[AttentionReads]:
    """Note who reads `PreTrainedConfig._attn_implementation`, or copies a config, while in
    the block (scoped: the property is put back and the copy hooks removed on exit)."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    prop = PreTrainedConfig.__dict__["_attn_implementation"]
    reads = AttentionReads()
    transformers_dir = os.path.dirname(sys.modules["transformers"].__file__)

    def getter(config):
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name in _ATTRIBUTE_HOOKS:
            frame = frame.f_back  # a config class's own attribute hook: who called it
        filename = frame.f_code.co_filename if frame is not None else ""
        if not (os.path.dirname(filename) == transformers_dir and os.path.basename(filename) in _GENERIC):
            reads.files.add(filename)
        return prop.fget(config)

    def copier(name):
        def __copy(config, *memo):
            # A copy made by model code carries whatever implementation the config had when it
            # was made: under vLLM's settings "vllm", in the plain build not. Who copies counts
            # as a reader.
            frame = sys._getframe(1)
            while frame is not None and os.path.basename(frame.f_code.co_filename) == "copy.py":
                frame = frame.f_back
            filename = frame.f_code.co_filename if frame is not None else ""
            if not (os.path.dirname(filename).startswith(transformers_dir) and os.path.basename(filename) in _COPIERS):
                reads.files.add(filename)
            saved = PreTrainedConfig.__dict__[name]
            delattr(PreTrainedConfig, name)  # the default copy, without this hook
            try:
                return copy.deepcopy(config, *memo) if name == "__deepcopy__" else copy.copy(config)
            finally:
                setattr(PreTrainedConfig, name, saved)
        return __copy

    PreTrainedConfig._attn_implementation = property(getter, prop.fset, prop.fdel, prop.__doc__)
    PreTrainedConfig.__deepcopy__ = copier("__deepcopy__")
    PreTrainedConfig.__copy__ = copier("__copy__")
    try:
        yield reads
    finally:
        PreTrainedConfig._attn_implementation = prop
        for name in ("__deepcopy__", "__copy__"):
            if name in PreTrainedConfig.__dict__:
                delattr(PreTrainedConfig, name)


def needs_own_build(plain_failed: bool, reads: AttentionReads | None) -> bool:
    """Whether vLLM's build may differ from the plain one (see the module's docstring)."""
    return plain_failed or reads is None or bool(reads.files)


@contextlib.contextmanager
def init_on_device_without_buffers(device) -> Iterator[None]:
    """vLLM's context manager (utils.py:51-91), copied: each parameter moved to `device` as it
    is registered; buffers and every other tensor are made where they would be anyway."""
    import torch.nn as nn

    old_register_parameter = nn.Module.register_parameter

    def register_empty_parameter(module, name, param):
        old_register_parameter(module, name, param)
        if param is not None:
            param_cls = type(module._parameters[name])
            kwargs = module._parameters[name].__dict__
            kwargs["requires_grad"] = param.requires_grad
            module._parameters[name] = param_cls(module._parameters[name].to(device), **kwargs)

    nn.Module.register_parameter = register_empty_parameter
    try:
        yield
    finally:
        nn.Module.register_parameter = old_register_parameter


def configs(config) -> Iterator[object]:
    seen: set[int] = set()
    stack = [config]
    while stack:
        c = stack.pop()
        if c is None or id(c) in seen:
            continue
        seen.add(id(c))
        yield c
        stack.extend(getattr(c, key, None) for key in getattr(c, "sub_configs", {}) or {})
