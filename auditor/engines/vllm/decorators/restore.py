"""Decorate a class in place for the length of a `with` block, then restore it exactly.

In place is required: transformers models build their sub-models through
module-level class names, so a decorated copy would never be used. Restoring
is required too: an audit decorates one class under many policies in one
process, and a leftover wrapper would stack on the next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from auditor.engines.vllm.decorators.apply import decorate
from auditor.engines.vllm.decorators.interface import Decorator, DynamicArgDims
from auditor.engines.vllm.decorators.registry import get_policy


@dataclass
class ClassSnapshot:
    """A class's own attributes and bases, as they were when taken."""

    cls: type
    attributes: dict[str, Any] = field(default_factory=dict)
    bases: tuple[type, ...] = ()

    @classmethod
    def take(cls, target: type) -> ClassSnapshot:
        return cls(target, dict(target.__dict__), target.__bases__)

    def restore(self) -> None:
        """Put back the bases, drop added attributes, reset changed ones."""
        if self.cls.__bases__ != self.bases:
            self.cls.__bases__ = self.bases
        current = dict(self.cls.__dict__)
        for key in current.keys() - self.attributes.keys():
            delattr(self.cls, key)
        for key, value in self.attributes.items():
            if current.get(key, _MISSING) is not value:
                setattr(self.cls, key, value)


_MISSING = object()


@contextlib.contextmanager
def decorated(cls: type, decorator: Decorator | str,
              dynamic_arg_dims: DynamicArgDims | None = None) -> Iterator[type]:
    """Decorate `cls` in place with `decorator` (a Decorator or a policy name), yield it, restore it.

    Raises DecorateError (after restoring) when decoration fails; the class is
    restored however the block exits.
    """
    if isinstance(decorator, str):
        decorator = get_policy(decorator)
    snapshot = ClassSnapshot.take(cls)
    try:
        yield decorate(cls, decorator, dynamic_arg_dims)
    finally:
        snapshot.restore()
