"""How vLLM resolves `dtype="auto"` for a model: the dtype the compile check builds it in under
`--dtype auto` (what vLLM serves it in, not the float32 of a CPU trial).

Transcribed from the followed release (its record's citations): the config's dtype, read as
`ModelArchConfigConvertorBase.get_torch_dtype` reads it (a default config has none: no weights
to read it from, so float32), then `_resolve_auto_dtype`: float32 is downcast to the platform's
preferred dtype (its first supported one, float16 for a pooling model), a dtype the platform does
not support falls back to it, and float16 is never chosen for the types vLLM keeps from it.
"""

from __future__ import annotations

from auditor.engines.common import architecture
from auditor.engines.interface import cited, transcribed
from auditor.engines.vllm.releases import followed


def auto_dtype(model_type: str, config, device: str) -> tuple[str, str]:
    """(the torch dtype's name vLLM runs this model in on `device`, where the rule is: the release
    and its file:lines)."""
    release = followed()
    dtype = _resolve_auto_dtype(model_type, config_dtype(config), is_pooling_model=_pooling(config, model_type),
                                supported=supported_dtypes(device))
    where = (f"vLLM {release.version} {cited(release, 'resolve_auto_dtype')}, "
             f"{cited(release, 'get_torch_dtype')}, {cited(release, f'supported_dtypes: {_platform(device)}')}")
    return str(dtype).removeprefix("torch."), where


def _platform(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


@transcribed(followed(), "get_torch_dtype")
def config_dtype(config):
    """ModelArchConfigConvertorBase.get_torch_dtype, for a config with no weights beside it (the
    safetensors metadata it reads next is absent): the config's dtype, its text, vision or encoder
    config's, else float32."""
    import torch

    found = getattr(config, "dtype", None)
    if found is None:
        found = getattr(config.get_text_config(), "dtype", None)
    if found is None and hasattr(config, "vision_config"):
        found = getattr(config.vision_config, "dtype", None)
    if found is None and hasattr(config, "encoder_config"):
        found = getattr(config.encoder_config, "dtype", None)
    if isinstance(found, str):  # a config read from JSON keeps the name
        found = getattr(torch, found.removeprefix("torch."), None)
    return found if found is not None else torch.float32


def supported_dtypes(device: str) -> list:
    """The platform's supported_dtypes: CUDA by compute capability; an x86 or aarch64 CPU has
    bfloat16 and float16 natively (the POWERPC, macOS and RISC-V branches do not apply here)."""
    import torch

    if _platform(device) == "cuda":
        return _cuda_supported_dtypes(torch.cuda.get_device_capability(torch.device(device)))
    return [torch.bfloat16, torch.float16, torch.float32]


@transcribed(followed(), "supported_dtypes: cuda")
def _cuda_supported_dtypes(capability: tuple[int, int]) -> list:
    import torch

    major, minor = capability
    if major * 10 + minor >= 80:  # Ampere and Hopper or later NVIDIA GPUs.
        return [torch.bfloat16, torch.float16, torch.float32]
    if major * 10 + minor >= 60:  # Pascal, Volta and Turing NVIDIA GPUs, BF16 is not supported
        return [torch.float16, torch.float32]
    return [torch.float32]


def _pooling(config, model_type: str) -> bool:
    """Whether vLLM runs the architecture as a pooling model: the suffix table's runner for it."""
    arch = architecture(config, model_type) or ""
    runner = next((defaults[0] for suffix, defaults in followed().suffixes if arch.endswith(suffix)), "generate")
    return runner == "pooling"


# model_type -> reason (config/model.py's _FLOAT16_NOT_SUPPORTED_MODELS)
_FLOAT16_NOT_SUPPORTED_MODELS = {
    "gemma2": "Numerical instability. Please use bfloat16 or float32 instead.",
    "gemma3": "Numerical instability. Please use bfloat16 or float32 instead.",
    "gemma3_text": "Numerical instability. Please use bfloat16 or float32 instead.",
    "glm4": "Numerical instability. Please use bfloat16 or float32 instead.",
}


@transcribed(followed(), "resolve_auto_dtype")
def _resolve_auto_dtype(model_type: str, config_dtype, *, is_pooling_model: bool, supported: list):
    """_resolve_auto_dtype, with the platform's supported dtypes passed in (its warning left out)."""
    import torch

    supported_dtypes = [dtype for dtype in supported
                        if not (model_type in _FLOAT16_NOT_SUPPORTED_MODELS and dtype == torch.float16)]
    if is_pooling_model and torch.float16 in supported_dtypes:
        preferred_dtype = torch.float16
    else:
        preferred_dtype = supported_dtypes[0]
    # Downcast for float32 models
    if config_dtype == torch.float32:
        config_dtype = preferred_dtype
    if config_dtype in supported_dtypes:
        return config_dtype
    return preferred_dtype
