"""Whose fault a failure is, read off the traceback: who raised it, and at whose step.

Every row carries a `Fault`. `auditor.core.classifier.classify` is the one place that sets it (from a
status's default, `DEFAULT_FAULT`, or from where the exception was raised, `origin`); this module
holds the vocabulary and the frame rules, and no rule about statuses.

Who raised an exception is its innermost frame that is not plumbing (the standard library's
frames, torch's `Module.__getattr__` raising the attribute a caller asked for, a config class's
attribute hooks): the auditor's own code, code the auditor emulates or wraps (a module or package
marked `AUDITED = True`: an engine's decorator, its adapter), a serving engine's installed package
or a function the auditor transcribed from it (`transcribe`: the engine's, as if the engine had
run it), or anything else (transformers, torch, model code: the model's side).
"""

from __future__ import annotations

import linecache
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from types import CodeType


class Fault(str, Enum):
    """Whose fault a row is; the values are the exact strings of every output."""

    NONE = ""  # a pass, or a skip: nothing failed
    MODEL = "model"  # the model (its config, its code, transformers) fails on its own
    ENGINE = "engine"  # the engine refuses or breaks on a model that builds on its own
    PAIRING = "engine/model"  # the engine's step meets the model's code: either side could fix it
    ENVIRONMENT = "environment"  # this machine: a package, a kernel, the meta device, memory, time
    AUDITOR = "auditor"  # the auditor's own code or executor: a bug of ours

    def __str__(self) -> str:
        return self.value

    @property
    def description(self) -> str:
        return FAULT_DESCRIPTIONS[self]


FAULT_DESCRIPTIONS: dict[Fault, str] = {
    Fault.NONE: "nothing failed (a pass or a skip)",
    Fault.MODEL: "the model fails on its own: its default config, its code, or transformers' code for it",
    Fault.ENGINE: "the serving engine (or its compile decorator) refuses or breaks on a model that builds on "
                  "its own: the engine's own refusal, or an exception raised in the engine's code",
    Fault.PAIRING: "the engine's step meets the model's code (the engine's setting, say, is a key the model's "
                   "own lookup lacks): raised in transformers or model code at the engine's step",
    Fault.ENVIRONMENT: "this machine, not a verdict: a missing package, a kernel the installed wheel lacks, the "
                       "meta device's limits, memory, time, a dead worker",
    Fault.AUDITOR: "the auditor's own code or executor failed: a bug of ours, never the model's",
}


class EngineRefusal(Exception):
    """An emulated engine refusing a model, as the engine's own code would: `message` is the
    engine's (`"ValueError: Unsupported TP style ..."`, its exception type first), `gate` the gate
    it stops at where the raiser knows it, `extras` what the row records beside it. Raised in the
    auditor's emulation, it is the engine's verdict (`unsupported`, fault engine), never an
    auditor bug."""

    def __init__(self, message: str, *, gate: str = "", extras: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.gate = gate
        self.extras = dict(extras or {})


# -- code transcribed from an engine ---------------------------------------------------------------

@dataclass(frozen=True)
class Transcription:
    """A function of the auditor copied or transcribed from an engine's code: the engine (its
    title), the release it was copied from, and where in that release's wheel (`where`,
    "sglang/srt/models/transformers.py:71-91"; the engine's release record holds it). What such a
    function raises is the engine's, as if the engine had run it."""

    engine: str
    release: str
    where: str
    step: str  # the engine's function, or the record's name for the step

    def note(self, at: str) -> str:
        """The place note a message ends with: the engine's file:line first, then the copy's."""
        return (f"[{ENGINE_LINE} {self.where} ({self.engine} {self.release}, {self.step}; "
                f"transcribed at {at})]")


# The place notes a message may end with: where, not what (no part of a signature).
ENGINE_LINE = "raised in the engine's code at"
# By the code object itself (its id; the registry keeps it alive), not by its value: a copy of
# the same lines elsewhere is not marked.
_TRANSCRIBED: dict[int, tuple[CodeType, Transcription]] = {}


def transcribe(function: Callable, transcription: Transcription) -> Callable:
    """Mark `function` (and the functions defined inside it) as transcribed; returns it as it is."""
    stack = [function.__code__]
    while stack:
        code = stack.pop()
        _TRANSCRIBED[id(code)] = (code, transcription)
        stack.extend(const for const in code.co_consts if isinstance(const, CodeType))
    function.__transcription__ = transcription
    return function


def transcription_at(frame) -> Transcription | None:
    """The transcription a frame runs, None for any other code."""
    found = _TRANSCRIBED.get(id(frame.f_code))
    return found[1] if found is not None and found[0] is frame.f_code else None


def transcribed_raise(exc: BaseException) -> tuple[Transcription, str] | None:
    """(transcription, the copy's `file.py:line`) when the innermost non-plumbing frame of `exc`
    is a transcribed function's; None else."""
    found = innermost(exc)
    transcription = transcription_at(found[0]) if found is not None else None
    return None if transcription is None else (transcription, place(*found))


# -- who raised it -------------------------------------------------------------------------------

class Origin(str, Enum):
    AUDITOR = "auditor"  # the auditor's own code
    AUDITED = "audited"  # the auditor's copy or wrapper of what it audits (an engine's decorator)
    ENGINE = "engine"  # a serving engine's installed package
    MODEL = "model"  # transformers, torch, model code: the model's side


_STDLIB = os.path.dirname(os.path.abspath(os.__file__))
_AUDITOR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the auditor package
# Where the auditor emulates or wraps the thing under audit, the module (or its package's
# __init__) says so with a top-level `AUDITED = True` (the decorators package, an engine's
# decorator adapter): failures raised there are the audited code's verdicts, not an auditor bug.
AUDITED_MARK = "AUDITED"
# Frames that only pass an attribute read on: a config class's attribute hooks.
_ATTRIBUTE_HOOKS = frozenset({"__getattribute__", "__getattr__"})
_PER_LAYER_ERROR = "AmbiguousGlobalPerLayerAttributeError"


def _frames(exc: BaseException) -> list:
    return list(traceback.walk_tb(exc.__traceback__))


def _plumbing(frame) -> bool:
    filename = frame.f_code.co_filename
    return is_stdlib(filename) or (frame.f_code.co_name == "__getattr__" and
                                   filename.endswith(os.path.join("torch", "nn", "modules", "module.py")))


def innermost(exc: BaseException):
    """(frame, line) of the innermost frame of `exc` that is not plumbing; None without one."""
    for frame, lineno in reversed(_frames(exc)):
        if not _plumbing(frame):
            return frame, lineno
    return None


# The packages whose import failing is the model's side, not this machine's: transformers (its
# model modules), and remote code (dynamic modules), wherever they live.
_MODEL_PACKAGES = ("transformers", "transformers_modules")


def broken_import(exc: BaseException, engine_package: str = "") -> str:
    """The installed package whose own import raised `exc` ("nvidia_cutlass_dsl"): raised at the
    top level of one of its modules, while Python imported it, in a package that is neither the
    auditor, nor transformers, nor remote code, nor the engine whose step ran (`engine_package`:
    an engine module that cannot import under this transformers is the engine's). A venv whose
    packages do not fit together (cuda-python 12 beside cuda-bindings 13) is this machine's, not
    the model's. "" otherwise."""
    found = innermost(exc)
    modules = [frame for frame, _ in _frames(exc) if frame.f_code.co_name == "<module>"]
    if found is None or not modules:  # (Python drops importlib's own frames from such a
        return ""                      # traceback: a module's top level in it is being imported)
    package = _installed_package(modules[-1].f_code.co_filename)
    if not package or package in (*_MODEL_PACKAGES, engine_package):
        return ""
    return package if _installed_package(found[0].f_code.co_filename) == package else ""


def _installed_package(filename: str) -> str:
    """The top-level name of the installed package (under site-packages) a file belongs to; "" for
    the auditor's files and files outside site-packages; remote code counts as transformers_modules."""
    path = os.path.abspath(filename)
    if path.startswith(_AUDITOR + os.sep):
        return ""
    parts = path.split(os.sep)
    if "transformers_modules" in parts:
        return "transformers_modules"
    for index, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return parts[index + 1].removesuffix(".py")
    return ""


def origin(exc: BaseException, engine_package: str = "") -> Origin:
    """Who raised `exc` (see the module's docstring). `engine_package`: the import name of the
    engine whose step raised it, so that a frame of its installed package is the engine's."""
    found = innermost(exc)
    return origin_of_frame(found[0], engine_package) if found else Origin.MODEL


def origin_of_frame(frame, engine_package: str = "") -> Origin:
    """Who a frame's code is (see `origin`)."""
    if transcription_at(frame) is not None:  # as if the engine had run it
        return Origin.ENGINE
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_AUDITOR + os.sep):
        return Origin.AUDITED if _audited(frame.f_globals) else Origin.AUDITOR
    if engine_package and in_package(path, engine_package):
        return Origin.ENGINE
    return Origin.MODEL


def in_package(path: str, package: str) -> bool:
    """Whether `path` is a file of the installed package `package` (under site-packages)."""
    parts = os.path.abspath(path).split(os.sep)
    for index, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages") and parts[index + 1] == package:
            return True
    return False


def where(exc: BaseException) -> str:
    """`file.py:line` of the innermost non-plumbing frame, relative to its package's root (the
    auditor's, or site-packages); "" without a frame."""
    found = innermost(exc)
    return place(*found) if found else ""


def place(frame, lineno: int) -> str:
    """A frame's `file.py:line` (see `where`)."""
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_AUDITOR + os.sep):
        return f"{os.path.relpath(path, os.path.dirname(_AUDITOR))}:{lineno}"
    parts = path.split(os.sep)
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in ("site-packages", "dist-packages"):
            return f"{'/'.join(parts[index + 1:])}:{lineno}"
    return f"{os.path.basename(path)}:{lineno}"


def source_line(exc: BaseException) -> str:
    """The source line the innermost non-plumbing frame raised at, stripped ("" if unknown)."""
    found = innermost(exc)
    if found is None:
        return ""
    frame, lineno = found
    return linecache.getline(frame.f_code.co_filename, lineno).strip()


def auditor_bug_at(exc: BaseException, types: tuple[type[BaseException], ...] | None = None) -> str:
    """`file.py:line` when `exc` (of one of `types`; any type for None) was raised by the
    auditor's own code, not code it audits or emulates and not the model's; "" else."""
    if types is not None and (not isinstance(exc, types) or isinstance(exc, ModuleNotFoundError)):
        return ""
    if isinstance(exc, EngineRefusal):
        return ""
    found = innermost(exc)
    if found is None:
        return ""
    frame, lineno = found
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_AUDITOR + os.sep) and not _audited(frame.f_globals) and transcription_at(frame) is None:
        return place(frame, lineno)
    return ""


def _audited(module_globals: dict) -> bool:
    """Whether a frame's module, or the package it is in, carries the AUDITED mark."""
    if module_globals.get(AUDITED_MARK) is True:
        return True
    package = sys.modules.get(module_globals.get("__package__") or "")
    return getattr(package, AUDITED_MARK, False) is True


def is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen abc>, <string>, ...
        return True
    path = os.path.abspath(filename)
    parts = path.split(os.sep)
    return path.startswith(_STDLIB + os.sep) and "site-packages" not in parts and "dist-packages" not in parts


# -- per-layer (heterogeneous) configs -----------------------------------------------------------

def per_layer_read(exc: BaseException) -> tuple[str, str] | None:
    """(attribute, reader's `file.py:line`) when `exc` is, or was caused by, transformers'
    AmbiguousGlobalPerLayerAttributeError (a per-layer attribute read globally, transformers
    >= 5.15); the reader is the innermost frame outside the config's own attribute machinery."""
    current, seen = exc, set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(klass.__name__ == _PER_LAYER_ERROR for klass in type(current).__mro__):
            return _attribute_named(current), _reader(current)
        current = current.__cause__ or current.__context__
    return None


def per_layer_message(engine: str, attribute: str, at: str, message: str) -> str:
    """The one wording of a per-layer attribute read globally: its head (before ": ") is the
    signature's, unmasked, so that the types one engine line stops group as one cause."""
    return f"{engine} reads per-layer attribute {attribute!r} globally at {at}: {message}"


def _attribute_named(exc: BaseException) -> str:
    text = str(exc)
    return text.split("'")[1] if text.startswith("'") and text.count("'") >= 2 else ""


def _reader(exc: BaseException) -> str:
    transformers = sys.modules.get("transformers")
    root = os.path.dirname(transformers.__file__) if transformers is not None else "\0"
    config_files = (os.path.join(root, "configuration_utils.py"), os.path.join(root, "integrations", "heterogeneity"))
    for frame, lineno in reversed(_frames(exc)):
        path = os.path.abspath(frame.f_code.co_filename)
        if _plumbing(frame) or frame.f_code.co_name in _ATTRIBUTE_HOOKS or path.startswith(config_files):
            continue
        copied = transcription_at(frame)  # a copy reads it where the engine's line does
        return copied.where if copied is not None else place(frame, lineno)
    return ""
