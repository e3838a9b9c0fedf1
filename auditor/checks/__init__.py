"""The registry of checks: name -> Check. A check module adds itself here."""

from __future__ import annotations

from auditor.checks.interface import CaseContext, Check, Options

_REGISTRY: dict[str, type[Check]] = {}


def register(cls: type[Check]) -> type[Check]:
    _REGISTRY[cls.name] = cls
    return cls


def available() -> list[str]:
    """Every check: the built-in ones in their modules' order (whatever imported one first), then
    any a plugin registered, in the order it did."""
    _load_builtin()
    order = {module: index for index, module in enumerate(_BUILTIN)}
    return sorted(_REGISTRY, key=lambda name: order.get(_REGISTRY[name].__module__, len(order)))


def get(name: str) -> Check:
    _load_builtin()
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ValueError(f"unknown check {name!r}; available: {', '.join(_REGISTRY)}") from None


def across_releases(names) -> list[str]:
    """Those of the checks `names` that save under one release and compare under another
    (weights, tokenizer): upgrade-check's base side and bisect's good end save for them
    (--weights-save), every other side loads (--weights-from)."""
    return [name for name in names if get(name).across_releases]


def model_runners(names) -> list[str]:
    """Those of the checks `names` that build real models on --device (the tiny and compile
    checks): what decides the default device and which Ray tasks ask for GPUs."""
    return [name for name in names if get(name).runs_models]


_BUILTIN = tuple(f"auditor.checks.{module}" for module in
                 ("backend", "build", "compile", "decorate", "engine_config", "pickling", "serves", "tiny", "weights", "tokenizer",
                  "outputs"))


def _load_builtin() -> None:
    from auditor.checks import (  # noqa: F401  (they register themselves)
        backend,
        build,
        compile,
        decorate,
        engine_config,
        outputs,
        pickling,
        serves,
        tiny,
        tokenizer,
        weights,
    )


__all__ = ["CaseContext", "Check", "Options", "across_releases", "available", "get", "model_runners", "register"]
