"""This process's private scratch space: where twins are written and remote code is cached.

Remote code loads into transformers' dynamic package `transformers_modules`, which lives in the
modules cache (`HF_MODULES_CACHE`). Each process that loads remote code gets a cache of its own,
in a temporary directory removed when the process exits, so the auditor never writes to the
user's cache and two workers never share one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

DYNAMIC_PACKAGE = "transformers_modules"

_workdir: Path | None = None
_modules_cache: Path | None = None


def workdir() -> Path:
    """A temporary directory of this process, created on first use and removed at exit."""
    global _workdir
    if _workdir is None:
        _workdir = Path(tempfile.mkdtemp(prefix=f"auditor-{os.getpid()}-"))
        atexit.register(shutil.rmtree, _workdir, ignore_errors=True)
    return _workdir


def private_modules_cache() -> Path:
    """Point transformers' dynamic modules at a cache of this process's own; idempotent.

    transformers reads `HF_MODULES_CACHE` once, when it is imported, into a module global
    that its dynamic-module functions look up at call time; setting that global is enough.
    """
    global _modules_cache
    if _modules_cache is not None:
        return _modules_cache
    import transformers.dynamic_module_utils as dynamic

    cache = workdir() / "modules"
    cache.mkdir(exist_ok=True)
    dynamic.HF_MODULES_CACHE = str(cache)
    dynamic.init_hf_modules()  # creates its __init__.py and puts it on sys.path
    package = sys.modules.get(DYNAMIC_PACKAGE)
    if package is not None:  # imported from another cache before: look in ours too
        package.__path__.append(str(cache / DYNAMIC_PACKAGE))
    _modules_cache = cache
    return cache


def is_dynamic(module_name: str) -> bool:
    """Whether a module name belongs to the dynamic package of remote code."""
    return module_name == DYNAMIC_PACKAGE or module_name.startswith(DYNAMIC_PACKAGE + ".")


def dynamic_modules_loaded() -> list[str]:
    """Names of dynamic modules imported in this process."""
    return sorted(name for name in sys.modules if is_dynamic(name))


def forget_dynamic_modules(prefix: str) -> None:
    """Drop the modules under `prefix` from sys.modules, so one model type's remote code
    does not outlive it."""
    for name in [name for name in sys.modules if name == prefix or name.startswith(prefix + ".")]:
        del sys.modules[name]
