"""The `external:MODULE:ATTR` policy: any importable decorator factory with vLLM's convention.

The convention: `factory(dynamic_arg_dims=...)` returns a class decorator that
mutates the class in place; the decorated class then builds with `cls(*args)`.

A factory whose checking code lives outside its own module (an adapter around
another package's decorator) may carry an optional attribute
`audit_source_files`: a callable returning the paths of the files whose frames
are the decorator's own code, so that the classifier can tell a check-error
from a model error.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from typing import Any

from auditor.engines.vllm.decorators.interface import Decorator, DynamicArgDims

PREFIX = "external:"


def parse_spec(spec: str) -> tuple[str, str]:
    """`MODULE:ATTR` -> (module, attr); ValueError for anything else."""
    module, sep, attr = spec.partition(":")
    if not (module and sep and attr) or ":" in attr:
        raise ValueError(f"an external policy is 'external:MODULE:ATTR', got {PREFIX}{spec}")
    return module, attr


class ExternalDecorator(Decorator):
    """A decorator factory imported from `MODULE:ATTR`.

    Raises ImportError when the module (or something it imports) is missing,
    ValueError when the spec is malformed or ATTR is absent or not callable.
    """

    def __init__(self, spec: str, name: str | None = None) -> None:
        module_name, attr = parse_spec(spec)
        self.name = name or PREFIX + spec
        self.module = importlib.import_module(module_name)
        self.factory: Callable[..., Any] | None = getattr(self.module, attr, None)
        if not callable(self.factory):
            raise ValueError(f"{self.name}: module {module_name!r} has no callable {attr!r}")

    def apply(self, cls: type, dynamic_arg_dims: DynamicArgDims | None) -> type:
        return self.factory(dynamic_arg_dims=dynamic_arg_dims)(cls)

    def source_files(self) -> frozenset[str]:
        files = {_file_of(self.module), _file_of(self.factory)}
        extra = getattr(self.factory, "audit_source_files", None)
        if callable(extra):
            files.update(os.path.abspath(path) for path in extra())
        return frozenset(path for path in files if path)


def _file_of(obj: object) -> str | None:
    try:
        return os.path.abspath(inspect.getfile(inspect.unwrap(obj)))
    except (TypeError, ValueError):
        return None  # builtins and the like have no file
