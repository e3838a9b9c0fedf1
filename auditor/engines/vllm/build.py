"""The build vLLM's Transformers modeling backend makes, emulated (vLLM 0.33.0).

`Base.__init__` (vllm/model_executor/models/transformers/base.py:173-180) patches the config
(`_patch_config`, base.py:204-213: `text_config._attn_implementation = "vllm"`, `config.dtype =
torch.get_default_dtype()`), builds a throwaway model on `torch.device("meta")` to find the
classes to decorate (base.py:244-259), then builds the model it serves with
`AutoModel.from_config(config=..., dtype=model_config.dtype)` (base.py:223-233) under
`init_on_device_without_buffers("meta")` (utils.py:51-91: parameters moved to meta as they are
registered, everything else, buffers included, made on the default device). vLLM registers
the "vllm" attention implementation with transformers when its backend module is imported
(transformers/__init__.py:125), which is why transformers accepts the name.

A second build of every type would cost as much as the plain one, so `reads_attention()` notes,
during the plain build, which code read the config's attention implementation. Only where
model code (not transformers' generic machinery) read it, or the plain build failed, can
vLLM's build come out differently, and only then is it made (`needs_own_build`).
`benchmarks/backend_shortcut.py` compares that rule with a full build of every type.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

VLLM_ATTN_IMPL = "vllm"  # fusers/attention.py:23
VLLM_MLA_ATTN_IMPL = "vllm_mla"  # fusers/attention.py:24

# transformers' own files that read `_attn_implementation` for every model while building
# (its checks and dispatch set-up): the name they read is accepted once vLLM registered it.
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


def patched_config(config):
    """A copy of `config` as `Base._patch_config` leaves it (base.py:212-213)."""
    import torch

    config = copy.deepcopy(config)
    config.get_text_config()._attn_implementation = VLLM_ATTN_IMPL
    config.dtype = torch.get_default_dtype()
    return config


@contextlib.contextmanager
def vllm_attention_registered() -> Iterator[None]:
    """transformers knows the "vllm" implementations while in the block, as after vLLM's import
    (transformers/__init__.py:125-126). The stand-ins are never called: nothing runs a forward."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    def stand_in(*args, **kwargs):
        raise RuntimeError("vLLM's attention is not available in the auditor")

    mapping = ALL_ATTENTION_FUNCTIONS._global_mapping
    added = [name for name in (VLLM_ATTN_IMPL, VLLM_MLA_ATTN_IMPL) if name not in mapping]
    for name in added:
        ALL_ATTENTION_FUNCTIONS.register(name, stand_in)
    try:
        yield
    finally:
        for name in added:
            mapping.pop(name, None)


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


def build_like_vllm(config, trust_remote_code: bool = False):
    """The model vLLM's backend wraps: the throwaway meta build that finds the classes
    (base.py:250-251), then the real one (base.py:176-180, 231-233), both of the patched config.
    Returns (patched config, model)."""
    import torch
    from transformers import AutoModel

    config = patched_config(config)
    kwargs = {"config": config, "dtype": config.dtype}
    if trust_remote_code:
        kwargs["trust_remote_code"] = True
    from auditor.models.meta import no_init_weights

    # Weight initialisation is skipped (transformers' `no_init_weights`), as in the decorate
    # check's recorded build: on meta parameters it decides nothing, and here it was four fifths
    # of the check's time (torch's reference `normal_` on each meta parameter).
    with vllm_attention_registered(), no_init_weights():
        with torch.device("meta"):
            AutoModel.from_config(**kwargs)
        with init_on_device_without_buffers("meta"):
            model = AutoModel.from_config(**kwargs)
    return config, model


@contextlib.contextmanager
def patched_in_place(model) -> Iterator[object]:
    """The plain build standing in for vLLM's: its text config's attention implementation set
    to "vllm" (recursively into sub-configs, as the setter does) while in the block, then put
    back exactly. Yields the model's config."""
    config = model.config
    saved = [(c, c.__dict__.get("_attn_implementation_internal")) for c in _configs(config.get_text_config())]
    config.get_text_config()._attn_implementation = VLLM_ATTN_IMPL
    try:
        yield config
    finally:
        for c, value in saved:
            c.__dict__["_attn_implementation_internal"] = value


def _configs(config) -> Iterator[object]:
    seen: set[int] = set()
    stack = [config]
    while stack:
        c = stack.pop()
        if c is None or id(c) in seen:
            continue
        seen.add(id(c))
        yield c
        stack.extend(getattr(c, key, None) for key in getattr(c, "sub_configs", {}) or {})
