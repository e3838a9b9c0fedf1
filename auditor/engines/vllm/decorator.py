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
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import SimpleNamespace
from typing import Any

from auditor.core.hints import install_hint

_MARK = "_auditor_vllm_config_wrapper"
# The decorator under audit runs here: a failure in this module is the decorator's verdict, not
# an auditor bug (auditor.core.classifier.auditor_bug_at).
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
    helper = building_under(lambda _instance: _current_config(), **options)
    return helper(cls) if cls is not None else helper


def building_under(current: Callable[[Any], AbstractContextManager], **options: Any) -> Callable[[type], type]:
    """vLLM's `support_torch_compile(**options)`, unchanged, as a class decorator whose decorated
    `__init__` then runs inside `current(instance)` (a fresh context manager per build): the one place
    that makes vLLM's wrapper `__init__` buildable outside vLLM, with compilation off (this
    module) or on (own_compile.py)."""
    real = _decorators_module().support_torch_compile(**options)

    def helper(cls: type) -> type:
        real(cls)
        _build_under(cls, current)
        return cls

    return helper


def _source_files() -> list[str]:
    files = [os.path.abspath(__file__)]
    with contextlib.suppress(VllmUnavailableError):
        files.append(_decorators_module().__file__)  # where vLLM's wrapper `__init__` runs
    return files


support_torch_compile.audit_source_files = _source_files


def _build_under(cls: type, current: Callable[[Any], AbstractContextManager]) -> None:
    vllm_init = cls.__dict__["__init__"]
    if getattr(vllm_init, _MARK, False):
        return  # vLLM returned early (already decorated); keep a single wrapper

    @functools.wraps(vllm_init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with current(self):
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
    from vllm.config import CompilationConfig, CompilationMode

    config = least_config(lambda: CompilationConfig(mode=CompilationMode.NONE))
    if config is not None:
        return config
    return SimpleNamespace(compilation_config=CompilationConfig(mode=CompilationMode.NONE))


def least_config(compilation: Callable[[], Any]) -> Any | None:
    """A VllmConfig whose compilation config is `compilation()` and keeps its mode (vLLM's
    platform may rewrite it), or None when this machine cannot make one: first with the device vLLM
    infers, then on the CPU device."""
    from vllm.config import DeviceConfig, VllmConfig

    attempts = (
        lambda: VllmConfig(compilation_config=compilation()),
        lambda: VllmConfig(compilation_config=compilation(), device_config=DeviceConfig(device="cpu")),
    )
    from auditor.engines.vllm.shims import config_shims

    for attempt in attempts:
        try:
            with config_shims():
                config = attempt()
        except Exception:  # any failure here just means: try a smaller config
            continue
        if config.compilation_config.mode == compilation().mode:
            return config
    return None
