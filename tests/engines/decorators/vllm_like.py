"""A hand-written decorator factory with vLLM's calling convention, for `external:` tests.

It mutates like vLLM's (appends a base, sets a flag, replaces __init__ and
__call__) and checks positionals like vLLM 0.33.0, but knows nothing of the
auditor: classification must find its frames by this file alone.
"""

import inspect


class Wrapper:
    """Stands in for vLLM's TorchCompileWithNoGuardsWrapper."""

    def __init__(self, compile_prefix: str = "") -> None:
        self.compiled = False


def support_torch_compile(cls=None, *, dynamic_arg_dims=None):
    def helper(cls):
        sig = inspect.signature(cls.forward)
        for k in dynamic_arg_dims or {}:
            if k not in sig.parameters:
                raise ValueError(f"Argument {k} not found in the forward method of {cls}")
        return _decorate(cls)

    return helper(cls) if cls is not None else helper


def _decorate(cls):
    if Wrapper in cls.__bases__:
        return cls
    cls.__bases__ = cls.__bases__ + (Wrapper,)
    old_init = cls.__init__
    cls._ignore_compile_vllm = False

    def __init__(self, *args, vllm_config=None, prefix="", **kwargs):
        sig = inspect.signature(old_init)
        annotations = [p.annotation for p in sig.parameters.values()]
        for arg, annotation in zip(args, annotations, strict=False):
            if annotation is inspect._empty:
                continue
            if not isinstance(arg, annotation):
                init = f"'{type(self).__name__}.__init__'"
                arg_type = f"'{type(arg).__name__}'"
                raise TypeError(
                    f"{init} received a positional argument of type {arg_type}, "
                    "but no parameter of that type was found in the method signature. "
                    f"Please either annotate {init} or pass it as a keyword argument."
                )
        old_init(self, *args, **kwargs)
        self.vllm_config = vllm_config
        Wrapper.__init__(self)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    cls.__init__ = __init__
    cls.__call__ = __call__
    return cls


def copying_decorator(cls=None, *, dynamic_arg_dims=None):
    """Breaks the convention: returns a decorated copy instead of decorating in place."""
    return lambda cls: type(cls.__name__, (cls,), {})


not_callable = 42
