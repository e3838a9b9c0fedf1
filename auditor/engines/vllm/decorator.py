"""Adapter for vLLM's real decorator: the `vllm` policy (`external:auditor.engines.vllm.decorator:support_torch_compile`).

vLLM's wrapper `__init__` reads the *current* vLLM config when none is passed,
so a bare `cls(*args)` fails outside vLLM. This adapter applies
`vllm.compilation.decorators.support_torch_compile` unchanged, then wraps the
resulting `__init__` so a build runs under a current config with compilation
off (unless a config is already current, e.g. inside a real vLLM process).

vLLM is imported only when a class is decorated; without it that raises
`VllmUnavailableError` (an ImportError), never a decorate-error.
"""

from __future__ import annotations

import contextlib
import functools
import os
from types import SimpleNamespace
from typing import Any

from auditor.core.hints import install_hint

_MARK = "_auditor_vllm_config_wrapper"
# The decorator under audit runs here: a failure in this module is the decorator's verdict, not
# an auditor bug (auditor.core.status.auditor_bug_at).
AUDITED = True


class VllmUnavailableError(ImportError):
    """vLLM is not installed (or fails to import), so its decorator cannot be audited."""


def _decorators_module() -> Any:
    try:
        from vllm.compilation import decorators
    except ImportError as exc:
        raise VllmUnavailableError(
            "the 'vllm' policy needs vLLM's own decorator, but vllm cannot be imported "
            f"({exc}); install it with `{install_hint('vllm', quoted=False)}`"
        ) from exc
    return decorators


def support_torch_compile(cls: type | None = None, **options: Any):
    """vLLM's `support_torch_compile(cls=None, **options)`, made buildable outside vLLM."""
    real = _decorators_module().support_torch_compile(**options)

    def helper(cls: type) -> type:
        real(cls)
        _build_under_config(cls)
        return cls

    return helper(cls) if cls is not None else helper


def _source_files() -> list[str]:
    files = [os.path.abspath(__file__)]
    with contextlib.suppress(VllmUnavailableError):
        files.append(_decorators_module().__file__)  # where vLLM's wrapper `__init__` runs
    return files


support_torch_compile.audit_source_files = _source_files


def _build_under_config(cls: type) -> None:
    vllm_init = cls.__dict__["__init__"]
    if getattr(vllm_init, _MARK, False):
        return  # vLLM returned early (already decorated); keep a single wrapper

    @functools.wraps(vllm_init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with _current_config():
            vllm_init(self, *args, **kwargs)

    setattr(__init__, _MARK, True)
    cls.__init__ = __init__


def _current_config() -> contextlib.AbstractContextManager:
    from vllm.config import get_current_vllm_config_or_none, set_current_vllm_config

    if get_current_vllm_config_or_none() is not None:
        return contextlib.nullcontext()
    return set_current_vllm_config(_disabled_config())


@functools.cache
def _disabled_config() -> Any:
    """The least vLLM config with compilation off that this machine can make.

    A full VllmConfig infers the device and fails without an accelerator
    ("Failed to infer device type"); then try the CPU device, then a stand-in
    carrying only `compilation_config`, the one thing vLLM's wrapper reads
    when the mode is NONE.
    """
    from vllm.config import CompilationConfig, CompilationMode, DeviceConfig, VllmConfig

    attempts = (
        lambda: VllmConfig(compilation_config=CompilationConfig(mode=CompilationMode.NONE)),
        lambda: VllmConfig(compilation_config=CompilationConfig(mode=CompilationMode.NONE),
                           device_config=DeviceConfig(device="cpu")),
    )
    for attempt in attempts:
        try:
            config = attempt()
        except Exception:  # any failure here just means: try a smaller config
            continue
        if config.compilation_config.mode == CompilationMode.NONE:
            return config
    return SimpleNamespace(compilation_config=CompilationConfig(mode=CompilationMode.NONE))
