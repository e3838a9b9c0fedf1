"""One build that serves every policy of the project's own decorator.

The policies differ only in a check that runs on the positional arguments before the
original `__init__`; when it passes, the build goes on exactly as without it. So instead
of one build per policy, the component classes' `__init__` is wrapped by a recorder that
keeps each call's `self` and positional arguments and changes nothing else; each policy's
check is then run on the recorded calls. The first call a policy rejects is where its
real build would have stopped.

The plain build can itself be that recording: a ConstructionLog open around it logs every
module's constructor arguments, and the components' calls are picked from it afterwards
(`recording()` wraps the classes for a build of its own where the log cannot serve).
"""

from __future__ import annotations

import contextlib
import copyreg
import inspect
import sys
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
    # Every call of every class, in the order the build made them: where a build with several
    # classes decorated at once stops first (the joint encoder cell).
    order: list[Call] = field(default_factory=list)


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
            _wrap(cls, record.calls[cls], record.order)
        yield record
    finally:
        for cls, original in saved.items():
            if original is None:
                del cls.__init__
            else:
                cls.__init__ = original


def _wrap(cls: type, calls: list[Call], order: list[Call]) -> None:
    old_init = cls.__init__
    signature = inspect.signature(old_init)

    def __init__(self, *args, **kwargs):
        call = Call(self, signature, args)
        calls.append(call)
        order.append(call)
        old_init(self, *args, **kwargs)

    cls.__init__ = __init__


# -- the construction log: the recording taken from the plain build itself -------------------

_active: list | None = None  # the entries of the innermost open log, or None


@dataclass
class ConstructionLog:
    """Every torch module created while the log was open, with its constructor's positional
    arguments, in creation order.

    The positional arguments `Cls(*args)` hands to `__init__` are exactly those it hands to
    `__new__`, so a pass-through `torch.nn.Module.__new__` sees every component's arguments
    without knowing the components in advance: the plain build can serve as the recorded
    build, and the decorate check needs no build of its own.
    """

    entries: list[tuple[object, tuple]] = field(default_factory=list)

    def recording(self, classes: Sequence[type]) -> Recording | None:
        """The Recording that wrapping `classes`' `__init__` would have made of the same build,
        or None where the log cannot tell: a class with a `__new__` of its own (it may not pass
        the arguments on), or an instance of a subclass, whose `super().__init__` call reaches
        the class's `__init__` with arguments that `__new__` never sees."""
        import torch

        wanted = [cls for cls in dict.fromkeys(classes) if isinstance(cls, type) and issubclass(cls, torch.nn.Module)]
        if not _installed() or any(_own_new(cls) for cls in wanted):
            return None
        record = Recording({cls: [] for cls in wanted})
        signatures = {cls: inspect.signature(cls.__init__) for cls in wanted}
        subclass_of_wanted: dict[type, bool] = {}
        for module, args in self.entries:
            cls = type(module)
            if cls in record.calls:
                call = Call(module, signatures[cls], args)
                record.calls[cls].append(call)
                record.order.append(call)
                continue
            if cls not in subclass_of_wanted:
                subclass_of_wanted[cls] = any(issubclass(cls, base) for base in wanted)
            if subclass_of_wanted[cls]:
                return None
        return record


@contextlib.contextmanager
def constructions() -> Iterator[ConstructionLog]:
    """Log module constructions while in the block (see ConstructionLog); nests."""
    global _active
    _install()
    log = ConstructionLog()
    saved, _active = _active, log.entries
    try:
        yield log
    finally:
        _active = saved


class _LoggingNew(staticmethod):
    """What `torch.nn.Module.__new__` is once a log has been opened in a process.

    A staticmethod of `_new`, so that what looks at the class statically (dynamo, tracing a
    forward that builds a module, such as a slice of a ModuleList) finds a plain function it can
    inline; but its `__get__`, what `Cls(...)` and `inspect` use, hands out a callable that
    changes nothing but the log:

    * `inspect.signature(SomeModule)`: Python 3.10 prefers an inherited `__new__` to an
      inherited `__init__`, so a plain `__new__(cls, *args, **kwargs)` would make every module
      that inherits its `__init__` read `(*args, **kwargs)` there (3.11 and later look along
      the MRO and are unaffected). What `__get__` hands out carries the class's own `__init__`
      signature, which is what every supported Python reports without the hook.
    * `copy.deepcopy` and `copy.copy` of a module make it through `copyreg.__newobj__`
      without calling a constructor: not a construction, not logged.
    """

    def __get__(self, instance: object, owner: type | None = None) -> _BoundNew:
        return _BoundNew(owner if owner is not None else type(instance))


def _new(cls, *args, **kwargs):
    module = object.__new__(cls)
    if _active is not None:  # (never while dynamo traces: no log is open then)
        _active.append((module, args))
    return module


class _BoundNew:
    __slots__ = ("owner",)

    def __init__(self, owner: type) -> None:
        self.owner = owner

    def __call__(self, cls, *args, **kwargs):
        if _active is not None and sys._getframe(1).f_code in _COPIES:  # a copy, not a construction
            return object.__new__(cls)
        return _new(cls, *args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.owner.__init__)


# copyreg's reconstructors: what copy (and pickle's Python side) call `cls.__new__` from.
_COPIES = frozenset({copyreg.__newobj__.__code__, copyreg.__newobj_ex__.__code__})


def _install(base: type | None = None) -> None:
    """Give `base` (torch.nn.Module) the logging `__new__`, once per process, for good.

    It cannot be taken back: after an assigned `__new__` is deleted (or set back to
    `object.__new__`), CPython's `object.__new__` rejects the constructor arguments of every
    subclass. So it stays, and logs nothing while no log is open.
    """
    if base is None:
        import torch

        base = torch.nn.Module
    if not isinstance(base.__dict__.get("__new__"), _LoggingNew):
        base.__new__ = _LoggingNew(_new)


def _installed() -> bool:
    import torch

    return isinstance(torch.nn.Module.__dict__.get("__new__"), _LoggingNew)


def _own_new(cls: type) -> bool:
    import torch

    for klass in cls.__mro__:
        if klass is torch.nn.Module:
            return False
        if "__new__" in klass.__dict__:
            return True
    return False
