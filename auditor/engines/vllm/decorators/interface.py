"""What a decorator under audit is, and what a positional-check policy is.

Two layers plug in here:

* `CheckPolicy`: the positional-argument check run by the project's own
  `support_torch_compile` wrapper `__init__` (legacy, fixed, ...).
* `Decorator`: a whole decorator under audit, seen through vLLM's calling
  convention (`factory(dynamic_arg_dims=...)(cls)` mutates `cls` in place, then
  `cls(*args)` builds). The project's decorator with a policy is one; any
  importable factory (`external:MODULE:ATTR`) is another.

The refusal message is vLLM's, word for word, so a refusal reads the same
whichever decorator produced it.
"""

from __future__ import annotations

import abc
import inspect
from typing import Any

DynamicArgDims = dict[str, int | list[int] | dict[int, str]]
"""Argument name -> the dynamic dimension(s) of that argument (vLLM's alias)."""


def refusal(module: object, arg: object) -> TypeError:
    """The TypeError vLLM raises when a positional argument fails its check (recognised by
    auditor.core.classifier.REFUSAL_PATTERN)."""
    init = f"'{type(module).__name__}.__init__'"
    arg_type = f"'{type(arg).__name__}'"
    return TypeError(
        f"{init} received a positional argument of type {arg_type}, "
        "but no parameter of that type was found in the method signature. "
        f"Please either annotate {init} or pass it as a keyword argument."
    )


class CheckPolicy(abc.ABC):
    """The positional check the wrapper `__init__` runs before the model's own `__init__`."""

    name: str = ""

    @abc.abstractmethod
    def check(self, module: object, signature: inspect.Signature, args: tuple[Any, ...]) -> None:
        """Raise `refusal(module, arg)` for a rejected argument; return to accept.

        `signature` is that of the class's original `__init__` (with `self`);
        `args` are the positional arguments the caller passed (without `self`).
        """


class Decorator(abc.ABC):
    """A decorator under audit, as the auditor drives it."""

    name: str = ""

    @abc.abstractmethod
    def apply(self, cls: type, dynamic_arg_dims: DynamicArgDims | None) -> type:
        """Decorate `cls` in place, as vLLM does; return what the decorator returned."""

    @abc.abstractmethod
    def source_files(self) -> frozenset[str]:
        """Files whose frames are the decorator's own code: an exception raised there is a
        check-error (auditor.core.classifier.classify, Phase.DECORATED)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
