"""Pickling remote code by value, the way serving engines send configs to their workers.

Two pieces, as in vLLM: `cloudpickle.register_pickle_by_value(transformers_modules)`, so
classes of remote code travel with their definition instead of a module path the far side
lacks; and a reducer on multiprocessing's own pickler (`ForkingPickler`), which otherwise
pickles by reference, so that what goes through a pipe or queue is cloudpickled.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from auditor.remote.workspace import DYNAMIC_PACKAGE, is_dynamic


@dataclass(frozen=True)
class Parcel:
    """What is sent to the far side: a config, and the model class when that is remote code too.

    It plays the part of the engine's own config object (vLLM's VllmConfig), which is what
    the reducer is registered for.
    """

    config: object
    model_class: type | None = None


def register_by_value():
    """`cloudpickle.register_pickle_by_value(transformers_modules)`; idempotent."""
    import cloudpickle

    package = importlib.import_module(DYNAMIC_PACKAGE)
    if DYNAMIC_PACKAGE not in cloudpickle.list_registry_pickle_by_value():
        cloudpickle.register_pickle_by_value(package)
    return package


def reduce_by_value(obj) -> tuple:
    """The reducer: the object cloudpickled, loaded back with plain `pickle.loads`."""
    import cloudpickle

    return pickle.loads, (cloudpickle.dumps(obj),)


@contextlib.contextmanager
def reducers(classes: Sequence[type]) -> Iterator[None]:
    """`reduce_by_value` on ForkingPickler for `classes` while in the block, then as before."""
    from multiprocessing.reduction import ForkingPickler

    table = ForkingPickler._extra_reducers
    saved = {cls: table[cls] for cls in classes if cls in table}
    try:
        for cls in classes:
            ForkingPickler.register(cls, reduce_by_value)
        yield
    finally:
        for cls in classes:
            table.pop(cls, None)
        table.update(saved)


def remote_classes(config) -> list[type]:
    """The classes of `config` and of its sub-configs, nested, that are remote code."""
    found: dict[type, None] = {}
    pending = [config]
    while pending:
        obj = pending.pop()
        if is_dynamic(type(obj).__module__):
            found.setdefault(type(obj), None)
        for key in getattr(obj, "sub_configs", {}) or {}:
            value = getattr(obj, key, None)
            if value is not None and hasattr(value, "to_dict"):
                pending.append(value)
    return list(found)


def dumps_by_value(parcel: Parcel) -> bytes:
    """The parcel as multiprocessing's pickler writes it, with by-value registration and reducers."""
    from multiprocessing.reduction import ForkingPickler

    register_by_value()
    with reducers([Parcel, *remote_classes(parcel.config)]):
        return bytes(ForkingPickler.dumps(parcel))


def dumps_by_reference(obj) -> bytes:
    """Plain pickle: classes travel as module paths."""
    return pickle.dumps(obj)
