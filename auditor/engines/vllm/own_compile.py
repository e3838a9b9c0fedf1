"""vLLM's own compile path, as the reference the compile check's emulation is held against.

`own_compiler(backend)` gives an `OwnCompiler`: a `Decorator` that applies vLLM's real
`support_torch_compile` (vllm/compilation/decorators.py) so that the decorated class builds under
a current VllmConfig in `CompilationMode.DYNAMO_TRACE_ONCE` with `backend` (what vLLM itself
picks on a CPU), and the context manager that must be current while the compiled model is called.
The decorator's wrapper is vLLM's `TorchCompileWithNoGuardsWrapper` (vllm/compilation/wrapper.py):
`torch.compile(forward, fullgraph=True, dynamic=False, options={"guard_filter_fn": skip every
guard})`, the dims of `dynamic_arg_dims` marked at the first compiled call, and every later call
dispatched straight to the code compiled then (the bytecode hook), whatever its length.

How a trial drives it (what the compile check does):

    compiler = own_compiler("aot_eager")
    with decorated(component.cls, compiler.decorator, component.dynamic_arg_dims):
        model = build_tiny(config)                  # builds under the compile config
        set do_not_compile = True on the instances  # eager runs: vLLM's __call__ calls forward
        ... eager runs ...
        set do_not_compile = False; torch._dynamo.reset()
        with compiler.context():
            ... compiled runs ...                   # the first compiles, the others reuse it

vLLM's `__call__` reads `do_not_compile` first, so the eager runs neither trace nor compile, and
the first compiled call still compiles (vLLM's own `compiled` flag is set only there). Nothing of
vLLM's needs resetting between them: the wrapper clears dynamo's cache of `forward`'s code before
its first compile, and `torch._dynamo.reset()` leaves the bytecode hook in place.

The decorator is applied as vLLM's Transformers backend applies it to the decoder
(transformers/base.py, `_decorate_cls_for_torch_compile`): with `use_aot_compile=False`, so vLLM's
AOT compile and its disk cache (~/.cache/vllm) are never used, whatever VLLM_USE_AOT_COMPILE says.
Its `enable_if` (`can_enable_torch_compile`, which reads the served model's config) is not passed:
the compile check meets it as a gate first. `is_encoder` only names caches and logs with a
backend of torch's own, so it is left out too.

One thing is changed from vLLM, for the audit's sake, without changing what is traced or run:
the bytecode hook vLLM registers per instance holds the instance for the life of the process and,
once the trial has restored the class, fails every later dynamo compile of the process; it is
replaced by one that holds the instance weakly (`_hold_weakly`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from auditor.engines.vllm import decorator as adapter
from auditor.engines.vllm.decorators.interface import Decorator, DynamicArgDims

# A failure raised here is the decorator's verdict, as in the adapter (auditor.core.classifier.auditor_bug_at).
AUDITED = True

_NAMES = itertools.count()


@dataclass(frozen=True)
class OwnCompiler:
    """vLLM's decorator in compile mode, and the context its compiled calls need."""

    decorator: Decorator
    context: Callable[[], AbstractContextManager]  # a fresh one per `with`; vLLM's current config


def own_compiler(backend: str | Callable[..., Any]) -> OwnCompiler:
    """vLLM's own compile path with torch backend `backend`: a name torch knows ("eager",
    "aot_eager", "inductor") or a compiler function (the compile check's graph counter), which
    is registered with torch under a name of its own since vLLM's config holds a string."""
    session = _Session(backend)
    return OwnCompiler(OwnCompileDecorator(session), session.context)


class OwnCompileDecorator(Decorator):
    """vLLM's `support_torch_compile`, building under the session's compile config."""

    name = "vllm"

    def __init__(self, session: _Session) -> None:
        self.session = session

    def apply(self, cls: type, dynamic_arg_dims: DynamicArgDims | None) -> type:
        return adapter.building_under(self.session.building, dynamic_arg_dims=dynamic_arg_dims,
                                      use_aot_compile=False)(cls)

    def source_files(self) -> frozenset[str]:
        files = set(adapter.support_torch_compile.audit_source_files())
        files.add(os.path.abspath(__file__))
        with contextlib.suppress(ImportError):
            from vllm.compilation import wrapper  # its __init__ runs in the build: compile config, hook

            files.add(os.path.abspath(wrapper.__file__))
        return frozenset(files)


class _Session:
    """One compiler's state: its backend's name and its config, made at the first build."""

    def __init__(self, backend: str | Callable[..., Any]) -> None:
        self.backend = backend
        self._config: Any = None

    def config(self) -> Any:
        if self._config is None:
            self._config = _compile_config(_backend_name(self.backend))
        return self._config

    @contextlib.contextmanager
    def building(self, instance: Any) -> Iterator[None]:
        """Current while `instance` builds: vLLM's wrapper `__init__` reads the config there (it
        makes the compiled callable and registers the bytecode hook)."""
        _drop_stale_hooks()
        with self.context():
            yield
        _hold_weakly(instance)

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        """Current while the compiled model is called (and while it builds)."""
        from vllm.config import set_current_vllm_config

        with set_current_vllm_config(self.config()):
            yield


# (weak reference to an instance, its hook's handle): the hooks _hold_weakly put in vLLM's place.
_HOOKS: list[tuple[weakref.ref, Any]] = []


def _hold_weakly(instance: Any) -> None:
    """Put a bytecode hook that holds `instance` weakly in place of the one vLLM's wrapper
    registered, which holds it for the life of the process: after the trial the class is
    restored without vLLM's base, and vLLM's hook would then fail every later dynamo compile of
    the process (`AttributeError: ... no attribute 'original_code_object'`). While the instance
    lives and its class is decorated, the hook is vLLM's own `bytecode_hook`; after, it does
    nothing, and the next build removes it (a hook cannot remove itself: dynamo is iterating them)."""
    from torch._dynamo.convert_frame import register_bytecode_hook
    from vllm.compilation.wrapper import TorchCompileWithNoGuardsWrapper

    if getattr(instance, "_bytecode_hook_handle", None) is None:
        return  # vLLM did not compile it (do_not_compile), or registered no hook
    instance.cleanup()  # vLLM's own removal of its hook
    ref = weakref.ref(instance)

    def bytecode_hook(old_code, new_code):
        target = ref()
        if isinstance(target, TorchCompileWithNoGuardsWrapper):
            return target.bytecode_hook(old_code, new_code)
        return None

    instance._bytecode_hook_handle = register_bytecode_hook(bytecode_hook)  # so vLLM's cleanup removes ours
    _HOOKS.append((ref, instance._bytecode_hook_handle))


def _drop_stale_hooks() -> None:
    """Remove the hooks of instances that are gone or whose class is no longer decorated."""
    from vllm.compilation.wrapper import TorchCompileWithNoGuardsWrapper

    for entry in list(_HOOKS):
        ref, handle = entry
        if not isinstance(ref(), TorchCompileWithNoGuardsWrapper):
            handle.remove()
            _HOOKS.remove(entry)


def _backend_name(backend: str | Callable[..., Any]) -> str:
    if isinstance(backend, str):
        return backend
    from torch._dynamo import register_backend

    name = f"auditor_vllm_own_{next(_NAMES)}"
    register_backend(backend, name=name)
    return name


def _compile_config(backend: str) -> Any:
    """A VllmConfig in DYNAMO_TRACE_ONCE with `backend`; RuntimeError when this machine cannot
    make one (vLLM cannot infer a device: set VLLM_TARGET_DEVICE=cpu)."""
    from vllm.config import CompilationConfig, CompilationMode

    config = adapter.least_config(lambda: CompilationConfig(mode=CompilationMode.DYNAMO_TRACE_ONCE,
                                                            backend=backend))
    if config is None or config.compilation_config.backend != backend:
        raise RuntimeError(f"vLLM makes no config that compiles with DYNAMO_TRACE_ONCE and backend "
                           f"{backend!r} on this machine (set VLLM_TARGET_DEVICE=cpu on a CPU)")
    return config
