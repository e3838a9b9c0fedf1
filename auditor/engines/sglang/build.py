"""The build SGLang 0.5.23's Transformers fallback makes, emulated.

TransformersBase.__init__ (sglang/srt/models/transformers.py:616-624) sets its text config's
`_attn_implementation = "sglang"` (registered with transformers when the module is imported,
transformers.py:326) and builds `AutoModel.from_config(config, torch_dtype=<default dtype>,
trust_remote_code=True)` once, under `_init_on_device_without_buffers(meta)`
(transformers.py:166-186, the same code as vLLM's `init_on_device_without_buffers`): unlike
vLLM, no throwaway build first, and the dtype is the default one, as in the plain build.

So SGLang's build can differ from the plain meta build only where vLLM's can (model code that
reads the attention implementation while building, or a plain build that failed), and the
observation of the plain build is vLLM's (auditor.engines.common.reads_attention, one
observer for both engines); elsewhere the plain build stands in, its text config's
implementation set to "sglang" while the gates run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from auditor.engines.common import configs, init_on_device_without_buffers
from auditor.engines.sglang.gates import ATTN_IMPL, text_config


@contextlib.contextmanager
def sglang_attention_registered() -> Iterator[None]:
    """transformers knows the "sglang" implementation while in the block, as after SGLang's
    import; the stand-in is never called (nothing runs a forward)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    def stand_in(*args, **kwargs):
        raise RuntimeError("SGLang's attention is not available in the auditor")

    mapping = ALL_ATTENTION_FUNCTIONS._global_mapping
    added = ATTN_IMPL not in mapping
    if added:
        ALL_ATTENTION_FUNCTIONS.register(ATTN_IMPL, stand_in)
    try:
        yield
    finally:
        if added:
            mapping.pop(ATTN_IMPL, None)


def build_like_sglang(config, trust_remote_code: bool = True):
    """SGLang's build of `config` (sglang_config's copy, which it patches): returns (config,
    model). SGLang always passes trust_remote_code=True; it changes nothing for a built-in type."""
    import torch
    from transformers import AutoModel

    from auditor.models.meta import no_init_weights

    text_config(config)._attn_implementation = ATTN_IMPL
    # Weight initialisation skipped as in the vLLM build: on meta parameters it decides nothing.
    with sglang_attention_registered(), no_init_weights(), init_on_device_without_buffers("meta"):
        model = AutoModel.from_config(config, torch_dtype=torch.get_default_dtype(), trust_remote_code=True)
    return config, model


@contextlib.contextmanager
def patched_in_place(model) -> Iterator[None]:
    """The plain build standing in for SGLang's: the implementation of SGLang's text config of the
    model's config set to "sglang" (the setter recurses into sub-configs) while in the block,
    then put back exactly."""
    text = text_config(model.config)
    saved = [(c, c.__dict__.get("_attn_implementation_internal")) for c in configs(text)]
    text._attn_implementation = ATTN_IMPL
    try:
        yield
    finally:
        for c, value in saved:
            c.__dict__["_attn_implementation_internal"] = value
