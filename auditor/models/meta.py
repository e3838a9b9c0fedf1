"""Making default configs and building models on the meta device, the way transformers does."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, NamedTuple


def make_config(model_type: str):
    """The model type's default config: `CONFIG_MAPPING[model_type]()` (a `--remote-code`
    directory's config is loaded by auditor.remote.twin.load_remote_config instead)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]()


def load_checkpoint_config(folder: str):
    """A --checkpoint folder's config.json, offline, without remote code (a config that needs it
    is refused with transformers' own message: the user names remote code with --remote-code)."""
    from pathlib import Path

    from transformers import AutoConfig

    if not (Path(folder) / "config.json").is_file():
        raise FileNotFoundError(f"no config.json in {folder}: a checkpoint folder holds config.json and safetensors")
    return AutoConfig.from_pretrained(folder, local_files_only=True)


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
    from accelerate.utils import dtype_byte_size

    byte_size = functools.cache(dtype_byte_size)  # it parses str(dtype) with a regex each call
    tensors = _tensors(model)
    escaped = [name for name, tensor in (*tensors.parameters, *tensors.buffers) if tensor.device.type != "meta"]
    size = sum(tensor.numel() * byte_size(tensor.dtype) for tensor in tensors.sized)
    return {
        "model_class": type(model).__name__,
        "parameters": sum(p.numel() for p in tensors.counted),
        "parameter_bytes": int(size),
        "escaped": len(escaped),
        "escaped_names": escaped[:5],
    }


class _Tensors(NamedTuple):
    parameters: list  # model.named_parameters(remove_duplicate=False): every name a parameter has
    buffers: list  # model.named_buffers(remove_duplicate=False)
    sized: list  # accelerate's named_module_tensors(model, recurse=True): each tensor once
    counted: list  # model.parameters()


# The nn.Module methods whose walks `_tensors` does itself; where a class in the model overrides
# one, torch's (and accelerate's) own calls give the tensors instead.
_TORCH_WALKS = ("named_modules", "_named_members", "named_parameters", "named_buffers", "parameters")


def _tensors(model) -> _Tensors:
    """The model's tensors as torch's walks list them, walked once, without torch's nested
    generator per module (whose cost grows with the depth of every module: it was half of
    model_facts' time). remove_duplicate=True keeps each tensor where it first appears in the
    preorder, parameters and buffers apart: the first-seen order of a dict by id."""
    import torch.nn as nn

    paths: list[tuple[str, Any]] = []  # named_modules(remove_duplicate=False): preorder, every path
    stack = [("", model)]
    while stack:
        prefix, module = stack.pop()
        if any(getattr(type(module), name) is not getattr(nn.Module, name) for name in _TORCH_WALKS):
            return _torch_tensors(model)
        paths.append((prefix, module))
        dot = "." if prefix else ""
        stack.extend((prefix + dot + name, child) for name, child in reversed(module._modules.items())
                     if child is not None)

    def named(members: str) -> list:
        return [(prefix + ("." if prefix else "") + key, tensor) for prefix, module in paths
                for key, tensor in getattr(module, members).items() if tensor is not None]

    parameters, buffers = named("_parameters"), named("_buffers")
    unique_parameters = list({id(t): t for _, t in parameters}.values())
    unique_buffers = list({id(t): t for _, t in buffers}.values())
    return _Tensors(parameters, buffers, unique_parameters + unique_buffers, unique_parameters)


def _torch_tensors(model) -> _Tensors:
    from accelerate.utils import named_module_tensors

    return _Tensors(list(model.named_parameters(remove_duplicate=False)), list(model.named_buffers(remove_duplicate=False)),
                    [t for _, t in named_module_tensors(model, recurse=True)], list(model.parameters()))
