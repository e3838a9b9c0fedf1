"""One build that serves every policy of the project's own decorator.

The policies differ only in a check that runs on the positional arguments before the
original `__init__`; when it passes, the build goes on exactly as without it. So instead
of one build per policy, the component classes' `__init__` is wrapped by a recorder that
keeps each call's `self` and positional arguments and changes nothing else; each policy's
check is then run on the recorded calls. The first call a policy rejects is where its
real build would have stopped.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field


@dataclass
class Call:
    module: object
    signature: inspect.Signature
    args: tuple


@dataclass
class Recording:
    calls: dict[type, list[Call]] = field(default_factory=dict)


@contextlib.contextmanager
def recording(classes: Sequence[type]) -> Iterator[Recording]:
    """Record every call of each class's `__init__` (super() calls included) while in the block.

    Only torch modules are wrapped: anything else (`type(None)` when a model has no decoder)
    cannot be built under a decorator anyway, and the decorator says so before any build.
    """
    import torch

    classes = [cls for cls in dict.fromkeys(classes) if isinstance(cls, type) and issubclass(cls, torch.nn.Module)]
    record = Recording({cls: [] for cls in classes})
    saved = {cls: cls.__dict__.get("__init__") for cls in classes}
    try:
        for cls in classes:
            _wrap(cls, record.calls[cls])
        yield record
    finally:
        for cls, original in saved.items():
            if original is None:
                del cls.__init__
            else:
                cls.__init__ = original


def _wrap(cls: type, calls: list[Call]) -> None:
    old_init = cls.__init__
    signature = inspect.signature(old_init)

    def __init__(self, *args, **kwargs):
        calls.append(Call(self, signature, args))
        old_init(self, *args, **kwargs)

    cls.__init__ = __init__
