"""Remote-code twins: a built-in config type, written out as a local remote-code repository.

A twin holds a copy of the type's configuration module, with its relative imports made
absolute so that it loads as remote code, and a `config.json` with the config's values and
`auto_map` pointing at the copy. Loaded with `trust_remote_code=True`, its config class comes
from transformers' dynamic package `transformers_modules`, as a Hub repository's would.
The directory name has dots and hyphens, like `org/Name-3.5-MoE`, to exercise how
transformers turns a directory name into a module name.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

from auditor.remote.workspace import is_dynamic, private_modules_cache, workdir

TWIN_SUFFIX = "-3.5-Twin"
_FROM_RELATIVE = re.compile(r"from\s+\.+[\w.]*\s+import")


class TwinError(Exception):
    """A config type that cannot be turned into remote code; the message says why."""


def twin_name(model_type: str) -> str:
    return f"{model_type}{TWIN_SUFFIX}"


def write_twin(config, model_type: str, root: Path | None = None) -> Path:
    """Write the twin repository of `config` under `root/org/` and return its directory."""
    cls = type(config)
    module = sys.modules.get(cls.__module__)
    if module is None or not cls.__module__.startswith("transformers.models."):
        raise TwinError(f"{cls.__name__} is defined in {cls.__module__}, not in a transformers model package")
    if getattr(module, cls.__name__, None) is not cls:
        raise TwinError(f"{cls.__name__} is not a module-level class of {cls.__module__}")
    source_file = Path(getattr(module, "__file__", "") or "")
    if source_file.suffix != ".py" or not source_file.is_file():
        raise TwinError(f"{cls.__module__} has no Python source file")
    source = as_remote_code(source_file.read_text(encoding="utf-8"), module.__package__ or "")
    try:
        values = json.loads(config.to_json_string(use_diff=False))
    except (TypeError, ValueError) as exc:
        raise TwinError(f"config.json cannot be written: {type(exc).__name__}: {exc}") from exc
    values["auto_map"] = {"AutoConfig": f"{source_file.stem}.{cls.__name__}"}
    directory = (root or workdir() / "twins") / "org" / twin_name(model_type)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / source_file.name).write_text(source, encoding="utf-8")
    (directory / "config.json").write_text(json.dumps(values, indent=2), encoding="utf-8")
    return directory


def as_remote_code(source: str, package: str) -> str:
    """The module's source with each relative import made absolute against `package`.

    Found with `ast`, so a docstring or comment that looks like an import is left alone.
    """
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            absolute = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            index = node.lineno - 1
            lines[index] = _FROM_RELATIVE.sub(f"from {absolute} import", lines[index], count=1)
    return "".join(lines)


def load_remote_config(directory: Path | str):
    """`AutoConfig.from_pretrained(directory, trust_remote_code=True)`, into this process's own
    modules cache.

    Only ever called on a twin the auditor wrote or on a directory the user named with
    `--remote-code`: never on a Hub id.
    """
    from transformers import AutoConfig

    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"remote-code directory {directory} does not exist")
    private_modules_cache()
    return AutoConfig.from_pretrained(str(directory), trust_remote_code=True)


def make_twin(config, model_type: str):
    """Write, load and delete the twin of `config`; the loaded config's class is remote code.

    The directory is deleted once loaded: whatever reads the config later (the far side)
    provably cannot have read it from there.
    """
    directory = write_twin(config, model_type)
    try:
        twin = load_remote_config(directory)
    except Exception as exc:
        raise TwinError(f"the twin does not load: {type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if not is_dynamic(type(twin).__module__):
        raise TwinError(f"the twin loaded as {type(twin).__module__}.{type(twin).__name__}, not as remote code")
    return twin
