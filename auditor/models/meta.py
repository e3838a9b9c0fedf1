"""Making default configs and building models on the meta device, the way transformers does."""

from __future__ import annotations

import contextlib
import functools
from typing import Any


def make_config(model_type: str):
    """The model type's default config: `CONFIG_MAPPING[model_type]()` (a `--remote-code`
    directory's config is loaded by auditor.remote.twin.load_remote_config instead)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]()


@contextlib.contextmanager
def meta_device():
    """The meta device plus transformers' own meta-safe creation helpers, where it has them."""
    import torch

    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.device("meta"))
        try:
            from transformers import initialization as init
        except ImportError:  # transformers 4.x
            init = None
        if init is not None and hasattr(init, "meta_device_safe_creation_ops"):
            stack.enter_context(init.meta_device_safe_creation_ops())
        yield


@contextlib.contextmanager
def no_init_weights():
    """transformers' switch that skips weight initialisation, where the installed version has it."""
    try:
        from transformers.initialization import no_init_weights as skip
    except ImportError:
        try:
            from transformers.modeling_utils import no_init_weights as skip
        except ImportError:
            skip = contextlib.nullcontext
    with skip():
        yield


def build_on_meta(config, trust_remote_code: bool = False):
    """`AutoModel.from_config(config)` on the meta device.

    `trust_remote_code` only for a `--remote-code` directory's config: it lets transformers
    load the directory's model class (and register it with AutoModel for later builds).
    """
    from transformers import AutoModel

    with meta_device():
        if trust_remote_code:
            return AutoModel.from_config(config, trust_remote_code=True)
        return AutoModel.from_config(config)


def model_facts(model) -> dict[str, Any]:
    """Class, size, and how many tensors escaped the meta device, for the build row.

    `parameter_bytes` is accelerate's `compute_module_sizes(model)[""]` (parameters and buffers,
    each at its dtype's size), added up with the same accelerate helpers but without the
    per-submodule totals that function also makes: those cost a tenth of a meta build.
    """
    from accelerate.utils import dtype_byte_size, named_module_tensors

    byte_size = functools.cache(dtype_byte_size)  # it parses str(dtype) with a regex each call
    escaped = [
        name
        for name, tensor in _named_tensors(model)
        if tensor is not None and tensor.device.type != "meta"
    ]
    size = sum(tensor.numel() * byte_size(tensor.dtype) for _, tensor in named_module_tensors(model, recurse=True))
    return {
        "model_class": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "parameter_bytes": int(size),
        "escaped": len(escaped),
        "escaped_names": escaped[:5],
    }


def _named_tensors(model):
    yield from model.named_parameters(remove_duplicate=False)
    yield from model.named_buffers(remove_duplicate=False)
