"""The serving engines the auditor knows: one folder each (vllm/), described by an `Engine`
(interface.py). The only place that names an engine's own modules.

* `names()`: the engines, in the order their rows are written.
* `get(name) -> Engine`, `all()`: an engine folder is imported on first use; importing one never
  imports the engine itself (only its own-code functions and adapters do, when called).
* `by_policy(policy) -> Engine | None`: the engine whose own-code rows a policy name selects (its
  decorator's policy, or its `own_policy` where it has no decorator).
* `compile_semantics(name) -> CompileSemantics`: an engine's way of compiling, or `plain`.

Importing this package registers each engine's decorator policy (`vllm`) with the decorator
registry (auditor.engines.vllm.decorators.registry), which must not know the engines: every layer that
resolves policy names (checks, remote, api, cli) imports it first.
"""

from __future__ import annotations

import functools
import importlib

from auditor.engines.interface import PLAIN, CompileSemantics, Engine
from auditor.engines.vllm.decorators.registry import register_alias

_FOLDERS = ("vllm", "sglang")  # one per engine folder here, in the order their rows are written


def names() -> tuple[str, ...]:
    return _FOLDERS


@functools.cache
def get(name: str) -> Engine:
    if name not in _FOLDERS:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(_FOLDERS)}")
    return importlib.import_module(f"{__name__}.{name}").ENGINE


def all() -> tuple[Engine, ...]:  # noqa: A001  (engines.all(), as the registry reads)
    return tuple(get(name) for name in _FOLDERS)


def by_policy(policy: str) -> Engine | None:
    return next((engine for engine in all() if engine.policy == policy), None)


def gate_policies() -> frozenset[str]:
    """The policies that select an engine's own gate functions and no decorator (`sglang`):
    the checks that decorate leave them out (Options.decorator_policies)."""
    return frozenset(engine.own_policy for engine in all() if engine.decorator is None and engine.own_policy)


def compile_semantics(name: str) -> CompileSemantics:
    """The compile semantics a `--compile-semantics` name selects: an engine's, or `plain`."""
    if name == PLAIN.name:
        return PLAIN
    if name not in _FOLDERS:
        raise ValueError(f"unknown compile semantics {name!r}; known: {', '.join(semantics_names())}")
    return get(name).compile


def semantics_engine(name: str) -> Engine | None:
    """The engine whose compile semantics `name` selects; None for `plain`."""
    return None if name == PLAIN.name else get(name)


def semantics_names() -> tuple[str, ...]:
    return (*_FOLDERS, PLAIN.name)


def _register_policies() -> None:
    for engine in all():
        if engine.decorator is not None:
            register_alias(engine.decorator.policy, engine.decorator.spec)


_register_policies()

__all__ = ["PLAIN", "CompileSemantics", "Engine", "all", "by_policy", "compile_semantics", "gate_policies", "get", "names",
           "semantics_engine", "semantics_names"]
