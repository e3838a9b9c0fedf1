"""Decorating a class in place, and the error a decorator's rejection of the class becomes.

What a failed build under a decorator means (refused, check-error, the model's own error) is
judged by the one classifier, `auditor.core.classifier.classify(exc, Phase.DECORATED,
decorator_files=decorator.source_files())`.
"""

from __future__ import annotations

from auditor.core.messages import message_of
from auditor.core.status import Failure, Status, StatusError
from auditor.engines.vllm.decorators.interface import Decorator, DynamicArgDims


class DecorateError(StatusError):
    """Decoration itself failed; the decorator's exception is `original` (and `__cause__`).

    Its row is `decorate-error` with the original exception's message."""

    def __init__(self, cls: type, decorator: Decorator, original: BaseException) -> None:
        super().__init__(Failure.because(Status.DECORATE_ERROR, message_of(original)),
                         f"{decorator.name} could not decorate {cls.__qualname__}: "
                         f"{type(original).__name__}: {original}")
        self.original = original


def decorate(cls: type, decorator: Decorator, dynamic_arg_dims: DynamicArgDims | None = None) -> type:
    """Apply `decorator` to `cls` in place and return `cls`.

    Raises DecorateError for any failure of the decorator, or when it returns a
    class other than `cls` (a copy would never be used: transformers builds
    sub-models through module-level names). ImportError passes through
    unchanged: a decorator whose package is missing is a missing dependency,
    not a fault of the class.
    """
    try:
        result = decorator.apply(cls, dynamic_arg_dims)
    except ImportError:
        raise
    except Exception as exc:
        raise DecorateError(cls, decorator, exc) from exc
    if result is not cls:
        problem = TypeError(f"returned {result!r} instead of decorating {cls!r} in place")
        raise DecorateError(cls, decorator, problem)
    return cls
