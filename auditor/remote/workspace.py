"""This process's private scratch space: where twins are written and remote code is cached.

Remote code loads into transformers' dynamic package `transformers_modules`, which lives in the
modules cache (`HF_MODULES_CACHE`). Each process that loads remote code gets a cache of its own,
in a temporary directory removed when the process exits, so the auditor never writes to the
user's cache and two workers never share one.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

DYNAMIC_PACKAGE = "transformers_modules"
WORKDIR_PREFIX = "auditor-"  # then the process id, a dash, and mkdtemp's letters

_workdir: Path | None = None
_modules_cache: Path | None = None


def workdir() -> Path:
    """A temporary directory of this process, created on first use and removed at exit."""
    global _workdir
    if _workdir is None:
        _workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
        atexit.register(shutil.rmtree, _workdir, ignore_errors=True)
    return _workdir


def scratch(prefix: str) -> str:
    """A new directory inside this process's workdir: it goes when the workdir goes, and
    the pool removes a killed worker's workdir (remove_workdir_of), so nothing is left behind
    in the temporary directory even when a model type takes its worker down."""
    return tempfile.mkdtemp(prefix=prefix, dir=workdir())


def remove_workdir_of(pid: int) -> None:
    """Remove the workdir of process `pid` (dead: killed, or crashed before its atexit)."""
    for path in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}{pid}-*"):
        shutil.rmtree(path, ignore_errors=True)


def remove_orphaned_workdirs() -> list[str]:
    """Remove the workdirs of auditor processes that no longer exist (a parent killed with
    SIGKILL cannot clean up after itself); the paths removed."""
    import psutil

    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*-*"):
        pid = path.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and path.is_dir() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed


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


@contextlib.contextmanager
def child_environment(**values: str) -> Iterator[None]:
    """Set environment variables for children about to start (they inherit them), then put
    them back."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _DynamicModules:
    """The dynamic modules in sys.modules, found by looking only at names new since the last
    look: a scan of every loaded module's name, per message, was a measurable share of a sweep.
    transformers may put a remote-code module into sys.modules without its package, so every
    name is looked at once. A dynamic name that left sys.modules is forgotten, and looked at
    again if it comes back; other names that left are not looked for (pruning them costs a
    second pass over sys.modules per look, and only dynamic names are answered)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._dynamic: set[str] = set()

    def loaded(self) -> set[str]:
        modules = sys.modules
        gone = {name for name in self._dynamic if name not in modules}
        self._dynamic -= gone
        self._seen -= gone
        new = modules.keys() - self._seen  # the one pass over sys.modules
        self._seen |= new
        self._dynamic.update(name for name in new if is_dynamic(name))
        return set(self._dynamic)


_dynamic_modules = _DynamicModules()


def dynamic_modules_loaded() -> list[str]:
    """Names of dynamic modules imported in this process."""
    return sorted(_dynamic_modules.loaded())


def forget_dynamic_modules(prefix: str) -> None:
    """Drop the modules under `prefix` (a package inside the dynamic one) from sys.modules, so
    one model type's remote code does not outlive it."""
    for name in _dynamic_modules.loaded():
        if name == prefix or name.startswith(prefix + "."):
            del sys.modules[name]
