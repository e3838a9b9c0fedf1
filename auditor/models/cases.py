"""Discovering model types: transformers' MODEL_MAPPING_NAMES plus plugin registrations."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelCase:
    """One model type to audit, and where it came from."""

    model_type: str
    source: str = "transformers"  # or "plugin", "remote-code", "checkpoint", "saved"
    # A --remote-code directory: its config is loaded with trust_remote_code=True.
    remote_code: str = ""
    # A --checkpoint folder (config.json and safetensors): its config, at full size, is what every
    # check builds; the weights check maps its safetensors headers.
    checkpoint: str = ""


class SelectionError(ValueError):
    """--models / --exclude / --plugin asked for something that does not exist."""


def load_plugins(plugins: Sequence[str]) -> None:
    """Import each plugin (a module name or a .py file) so its registrations take effect."""
    for plugin in plugins:
        try:
            _import_plugin(plugin)
        except SelectionError:
            raise
        except Exception as exc:
            raise SelectionError(
                f"plugin {plugin!r} failed to import: {type(exc).__name__}: {exc}"
            ) from exc


def _import_plugin(plugin: str) -> None:
    path = Path(plugin)
    if plugin.endswith(".py") or path.is_file():
        if not path.is_file():
            raise SelectionError(f"plugin file {plugin!r} does not exist")
        name = "auditor_plugin_" + re.sub(r"\W", "_", str(path.resolve()))
        if name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    else:
        importlib.import_module(plugin)


def discover() -> list[ModelCase]:
    """Every model type AutoModel knows: the built-in mapping and run-time registrations."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING, MODEL_MAPPING_NAMES

    cases = {name: ModelCase(name) for name in MODEL_MAPPING_NAMES}
    # AutoModel.register stores config class -> model class in _extra_content.
    for config_class in getattr(MODEL_MAPPING, "_extra_content", {}):
        model_type = getattr(config_class, "model_type", "")
        if model_type and model_type not in cases:
            cases[model_type] = ModelCase(model_type, source="plugin")
    return [cases[name] for name in sorted(cases)]


def select(
    cases: Sequence[ModelCase], models: Iterable[str] = (), exclude: Iterable[str] = (), *,
    absent: list[str] | None = None,
) -> list[ModelCase]:
    """Keep the cases named by `models` (all when empty), minus those matching `exclude`.

    Each entry is an exact model type or a regular expression matched against the whole
    name. An entry that matches nothing is an error naming the closest known types; with
    `absent` (a list), a plain name of `models` that matches nothing is appended to it instead
    (a type another transformers release has).
    """
    known = [case.model_type for case in cases]
    models = list(models)
    if absent is not None:
        missing = [name for name in models if name not in known and _NAME.fullmatch(name)
                   and not _regex_hits(known, name)]
        absent.extend(missing)
        models = [name for name in models if name not in missing]
        if not models:
            return []
    chosen = _matching(known, models) if models else set(known)
    dropped = _matching(known, list(exclude))
    return [case for case in cases if case.model_type in chosen - dropped]


def _matching(known: list[str], patterns: list[str]) -> set[str]:
    matched: set[str] = set()
    for pattern in patterns:
        if pattern in known:
            matched.add(pattern)
            continue
        hits = _regex_hits(known, pattern)
        if not hits:
            close = difflib.get_close_matches(pattern, known, n=5, cutoff=0.5)
            hint = f"; closest known types: {', '.join(close)}" if close else ""
            raise SelectionError(f"unknown model type {pattern!r}{hint}")
        matched |= hits
    return matched


_NAME = re.compile(r"[\w.-]+")  # what a model type may be spelled with (qwen2.5_vl): a name, not a pattern


def _is_pattern(text: str) -> bool:
    return any(ch in text for ch in "^$*+?[](){}|\\.")


def _regex_hits(known: list[str], pattern: str) -> set[str]:
    if not _is_pattern(pattern):
        return set()  # a plain word that is not a type: don't treat it as a regex
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise SelectionError(f"{pattern!r} is neither a model type nor a valid regular expression: {exc}") from None
    return {name for name in known if regex.fullmatch(name)}


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1-based) -> (I, N); SelectionError for anything else."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise SelectionError(f"--shard {text!r} is not I/N with 1 <= I <= N, e.g. 2/4")
    return int(match.group(1)), int(match.group(2))


def shard(cases: Sequence[ModelCase], index: int, count: int) -> list[ModelCase]:
    """The index-th of count deterministic, disjoint, balanced slices of the sorted selection."""
    ordered = sorted(cases, key=lambda case: case.model_type)
    return [case for position, case in enumerate(ordered) if position % count == index - 1]
