"""The build vLLM's Transformers modeling backend makes, emulated (vLLM 0.33.0).

`Base.__init__` (vllm/model_executor/models/transformers/base.py:173-180) patches the config
(`_patch_config`, base.py:204-213: `text_config._attn_implementation = "vllm"`, `config.dtype =
torch.get_default_dtype()`), builds a throwaway model on `torch.device("meta")` to find the
classes to decorate (base.py:244-259), then builds the model it serves with
`AutoModel.from_config(config=..., dtype=model_config.dtype)` (base.py:223-233) under
`init_on_device_without_buffers("meta")` (utils.py:51-91, auditor.engines.common: parameters moved to meta as they are
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
from collections.abc import Iterator

from auditor.engines.common import configs, init_on_device_without_buffers, needs_own_build, reads_attention

__all__ = ["VLLM_ATTN_IMPL", "build_like_vllm", "needs_own_build", "patched_config", "patched_in_place",
           "reads_attention"]

VLLM_ATTN_IMPL = "vllm"  # fusers/attention.py:23
VLLM_MLA_ATTN_IMPL = "vllm_mla"  # fusers/attention.py:24

# transformers' own files that read `_attn_implementation` for every model while building
# (its checks and dispatch set-up): the name they read is accepted once vLLM registered it.
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
    saved = [(c, c.__dict__.get("_attn_implementation_internal")) for c in configs(config.get_text_config())]
    config.get_text_config()._attn_implementation = VLLM_ATTN_IMPL
    try:
        yield config
    finally:
        for c, value in saved:
            c.__dict__["_attn_implementation_internal"] = value
