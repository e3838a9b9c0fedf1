"""The project's own `support_torch_compile`: vLLM's decorator without vLLM.

Faithful to vllm/compilation/decorators.py (0.33.0) where the audit can see it:

* decoration-time validation raises the same exception types and messages;
* the class is mutated in place: a marker base is appended to `__bases__`
  (as vLLM appends TorchCompileWithNoGuardsWrapper; that assignment can fail
  by itself), and `__init__` and `__call__` are replaced;
* the wrapper `__init__(self, *args, vllm_config=None, prefix="", **kwargs)`
  runs the positional check, then forwards `vllm_config`/`prefix` only to an
  `__init__` that names them;
* with compilation off, `__call__` calls `self.forward` directly (bypassing
  nn.Module hooks), as vLLM's does;
* with `compile_mode="compile"`, the first call marks the dynamic dims of its
  arguments (`torch._dynamo.mark_dynamic`) and compiles `forward` with
  `torch.compile(fullgraph=True, backend=...)`, as vLLM's first call does; later
  calls run the compiled forward. With `guards=False` it compiles as vLLM's
  TorchCompileWithNoGuardsWrapper does (`dynamic=False`, every guard dropped by a
  `guard_filter_fn`), so the first graph serves every later call, right or wrong;
  with the guards kept (plain `torch.compile`), a call that would need another
  graph recompiles (or raises, under `torch._dynamo.config.error_on_recompile`).

The positional check is a pluggable `CheckPolicy`. `vllm_config` may be any
object or None: nothing here reads it, the compile mode is a parameter.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from auditor.engines.vllm.decorators.interface import CheckPolicy, Decorator, DynamicArgDims
from auditor.engines.vllm.decorators.policies import check_policy

COMPILE_MODES = ("none", "compile")  # compile: torch.compile(fullgraph=True) with the dims marked

# vLLM's inference list, less IntermediateTensors (a vLLM type no transformers model uses).
_TENSOR_ANNOTATIONS = [torch.Tensor, torch.Tensor | None, torch.FloatTensor, torch.FloatTensor | None]


class CompileSupport:
    """Marker base appended to a decorated class, standing in for vLLM's wrapper base."""


@dataclass(frozen=True)
class CompileSettings:
    """What a decorated instance knows of its compilation (stored as `compile_settings`)."""

    dynamic_arg_dims: DynamicArgDims
    mode: str = "none"
    backend: str | Callable[..., Any] = "inductor"
    guards: bool = True  # False: vLLM's way, every guard dropped (see _compiled_call)


def support_torch_compile(
    cls: type | None = None,
    *,
    dynamic_arg_dims: DynamicArgDims | None = None,
    policy: str | CheckPolicy = "legacy",
    compile_mode: str = "none",
    backend: str | Callable[..., Any] = "inductor",
    guards: bool = True,
):
    """Decorate `cls` (or return a decorator), mutating it in place like vLLM's.

    Raises TypeError/ValueError at decoration time exactly where vLLM does, and
    ValueError for an unknown `policy` or `compile_mode`.
    """
    checker = check_policy(policy)
    if compile_mode not in COMPILE_MODES:
        raise ValueError(f"unknown compile_mode {compile_mode!r}; valid: {', '.join(COMPILE_MODES)}")

    def cls_decorator_helper(cls: type) -> type:
        dims = _validated_dims(cls, dynamic_arg_dims)
        return _support_torch_compile(cls, CompileSettings(dims, compile_mode, backend, guards), checker)

    if cls is not None:
        assert isinstance(cls, type)  # as vLLM: bare use only on a class
        return cls_decorator_helper(cls)
    return cls_decorator_helper


def _validated_dims(cls: type, dynamic_arg_dims: DynamicArgDims | None) -> DynamicArgDims:
    """vLLM's `cls_decorator_helper` checks, with its messages (`{cls}` included)."""
    if not hasattr(cls, "forward"):
        raise TypeError("decorated class should have a forward method.")
    sig = inspect.signature(cls.forward)
    dims = dynamic_arg_dims
    if dims is None:
        dims = {k: 0 for k, v in sig.parameters.items() if v.annotation in _TENSOR_ANNOTATIONS}
    if len(dims) == 0:
        raise ValueError(
            f"No dynamic dimensions found in the forward method of {cls}. "
            "Please provide dynamic_arg_dims explicitly."
        )
    for k in dims:
        if k not in sig.parameters:
            raise ValueError(f"Argument {k} not found in the forward method of {cls}")
    return dims


def _support_torch_compile(cls: type, settings: CompileSettings, checker: CheckPolicy) -> type:
    if CompileSupport in cls.__bases__:
        return cls  # decorating twice is a no-op, as in vLLM
    cls.__bases__ = cls.__bases__ + (CompileSupport,)
    old_init = cls.__init__

    def __init__(self, *args, vllm_config: Any = None, prefix: str = "", **kwargs: Any) -> None:
        sig = inspect.signature(old_init)
        checker.check(self, sig, args)
        if "vllm_config" in sig.parameters:
            kwargs["vllm_config"] = vllm_config
        if "prefix" in sig.parameters:
            kwargs["prefix"] = prefix
        old_init(self, *args, **kwargs)
        self.vllm_config = vllm_config
        self.compile_settings = settings
        self.do_not_compile = settings.mode == "none"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.do_not_compile or torch.compiler.is_compiling():
            return self.forward(*args, **kwargs)
        return _compiled_call(self, *args, **kwargs)

    cls.__init__ = __init__
    cls.__call__ = __call__
    return cls


def _compiled_call(module: Any, *args: Any, **kwargs: Any) -> Any:
    """vLLM's compiled call: on the first, mark the dynamic dims and compile forward (fullgraph)."""
    settings = module.compile_settings
    if settings.mode != "compile":
        raise NotImplementedError(f"compile mode {settings.mode!r} is not implemented")
    compiled = module.__dict__.get("_compiled_forward")
    if compiled is None:
        mark_dynamic_inputs(module, settings.dynamic_arg_dims, args, kwargs)
        if settings.guards:
            compiled = torch.compile(module.forward, fullgraph=True, backend=settings.backend)
        else:  # vllm/compilation/wrapper.py, TorchCompileWithNoGuardsWrapper.__init__ (torch >= 2.10)
            compiled = torch.compile(module.forward, fullgraph=True, dynamic=False, backend=settings.backend,
                                     options={"guard_filter_fn": torch.compiler.skip_all_guards_unsafe})
        module.__dict__["_compiled_forward"] = compiled
    return compiled(*args, **kwargs)


def mark_dynamic_inputs(module: Any, dynamic_arg_dims: DynamicArgDims, args: tuple, kwargs: dict) -> None:
    """`torch._dynamo.mark_dynamic` on each named argument's dims (negative dims count from the end).

    As vLLM's `_mark_dynamic_inputs` with backed dynamic shapes: an argument that is None is left
    alone; one that is not a tensor is a ValueError.
    """
    bound = inspect.signature(type(module).forward).bind(module, *args, **kwargs)
    bound.apply_defaults()
    for name, value in dynamic_arg_dims.items():
        arg = bound.arguments.get(name)
        if arg is None:
            continue
        dims = list(value) if isinstance(value, (list, dict)) else [value]
        if not isinstance(arg, torch.Tensor):
            raise ValueError(f"Unsupported dynamic dimensions {dims} for argument {name} with type {type(arg)}.")
        torch._dynamo.mark_dynamic(arg, [arg.ndim + d if d < 0 else d for d in dims])


class OwnDecorator(Decorator):
    """The project's `support_torch_compile` with one check policy, as a `Decorator`."""

    def __init__(self, policy: str | CheckPolicy, compile_mode: str = "none",
                 backend: str | Callable[..., Any] = "inductor", guards: bool = True) -> None:
        self.policy = check_policy(policy)
        self.name = self.policy.name
        self.compile_mode = compile_mode
        self.backend = backend
        self.guards = guards

    def apply(self, cls: type, dynamic_arg_dims: DynamicArgDims | None) -> type:
        return support_torch_compile(
            dynamic_arg_dims=dynamic_arg_dims, policy=self.policy,
            compile_mode=self.compile_mode, backend=self.backend, guards=self.guards,
        )(cls)

    def source_files(self) -> frozenset[str]:
        # The wrapper is here; the check runs in the policy's modules (its bases' too).
        policy_files = {inspect.getfile(k) for k in type(self.policy).__mro__
                        if issubclass(k, CheckPolicy) and k is not CheckPolicy}
        return frozenset({os.path.abspath(__file__), *policy_files})
