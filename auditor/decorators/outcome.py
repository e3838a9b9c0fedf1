"""Decorating with a report, and classifying what a build under a decorator raised.

Outcomes (the strings are auditor.core.results.Status values):

* `decorate-error`: the decorator rejected the class itself (no forward, no
  dynamic dims, a dim argument forward lacks, a base that cannot be appended);
* `refused`: the decorator's own refusal TypeError for a positional argument;
* `check-error`: something else raised inside the decorator's own code, such as
  `isinstance()` rejecting a `list[int]` annotation;
* `error`: the model's own `__init__` failed.
"""

from __future__ import annotations

import os
import traceback

from auditor.decorators.interface import Decorator, DynamicArgDims, is_refusal

DECORATE_ERROR = "decorate-error"
REFUSED = "refused"
CHECK_ERROR = "check-error"
ERROR = "error"

_STDLIB = os.path.dirname(os.path.abspath(os.__file__))


class DecorateError(Exception):
    """Decoration itself failed; the decorator's exception is `original` (and `__cause__`)."""

    def __init__(self, cls: type, decorator: Decorator, original: BaseException) -> None:
        super().__init__(f"{decorator.name} could not decorate {cls.__qualname__}: "
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


def classify_failure(exc: BaseException, decorator: Decorator) -> str:
    """The outcome of a failed decoration or build: one of the four constants above."""
    if isinstance(exc, DecorateError):
        return DECORATE_ERROR
    if is_refusal(exc):
        return REFUSED
    if raised_in(exc, decorator.source_files()):
        return CHECK_ERROR
    return ERROR


def raised_in(exc: BaseException, files: frozenset[str]) -> bool:
    """Whether the innermost non-stdlib frame of `exc`'s traceback is in one of `files`.

    Standard-library frames are skipped because `isinstance(x, typing.Callable[...])`
    or `isinstance(x, typing.Any)` raises inside typing.py, called from the check.
    """
    own = {os.path.realpath(path) for path in files}
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not _is_stdlib(frame.filename):
            return os.path.realpath(frame.filename) in own
    return False


def _is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen abc>, <string>, ...
        return True
    path = os.path.abspath(filename)
    parts = path.split(os.sep)
    return path.startswith(_STDLIB + os.sep) and "site-packages" not in parts and "dist-packages" not in parts
