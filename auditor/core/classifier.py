"""The one place that turns an exception into a status and a fault: `classify(exc, phase)`.

Callers say *where* the exception came from (a `Phase`: making the config, building, decorating,
running eagerly, compiling, sending to another process, losing a task, an engine's step), never
how to judge it; the rules, in tables where they can be, are all here. It returns a `Failure`
(auditor.core.status): status, message, signature and whose fault it is (auditor.core.fault, from
where the exception was raised).
"""

from __future__ import annotations

import os
import re
import traceback
from enum import Enum

from auditor.core.fault import (
    ENGINE_LINE,
    EngineRefusal,
    Fault,
    Origin,
    broken_import,
    innermost,
    origin_of_frame,
    per_layer_message,
    per_layer_read,
    place,
    source_line,
    transcribed_raise,
)
from auditor.core.fault import auditor_bug_at as _bug_at
from auditor.core.fault import is_stdlib as _is_stdlib
from auditor.core.messages import MODEL_LINE, message_of, signature_of, summary
from auditor.core.status import Failure, Status, StatusError


class Phase(str, Enum):
    """Where an exception came from: the context `classify` judges it in."""

    CONFIG = "config"  # making the default config: a plain error is a config-error
    BUILD = "build"  # building a model without a decorator, or a check's own step
    DECORATED = "decorated"  # decorating a class, or building with decorated classes
    EAGER = "eager"  # running the tiny model without compiling
    COMPILE = "compile"  # compiling it and running it compiled
    TRANSPORT = "transport"  # sending a config to another process (receiver, Ray) and back
    TASK = "task"  # an executor lost a model type's task (Ray)
    # An engine's step (a gate, the build under its settings) on a model that builds on its own:
    # what raises there stops the engine there (`unsupported`), attributed by who raised it.
    ENGINE = "engine"


# -- the rules -------------------------------------------------------------------------------

# Substrings of errors that mean "this wanted the hub", raised by huggingface_hub and
# transformers when HF_HUB_OFFLINE=1 (or the network is unreachable).
_HUB_MARKERS = (
    "offline mode",
    "offlinemodeisenabled",
    "hf_hub_offline",
    "couldn't connect to 'https://huggingface.co'",
    "we couldn't connect to",
    "cannot find the requested files in the local cache",
    "outgoing traffic has been disabled",
    "connectionerror",
)
_HUB_TYPES = {"OfflineModeIsEnabled", "LocalEntryNotFoundError", "ConnectionError", "ConnectTimeout"}
_OOM_TYPES = {"MemoryError", "OutOfMemoryError"}
# What this machine cannot decide (Status.UNDECIDED): the meta device's limits (a tensor copied
# or read out of it, as model code that fills a tensor at __init__ does), and a custom kernel the
# installed wheel lacks here (torch.ops._C.prepack_moe_weight of vLLM's CUDA wheel on a CPU).
_UNDECIDABLE = (
    "cannot copy out of meta tensor",
    "cannot be called on meta tensors",
    "'_opnamespace' '_c' object has no attribute",
)
# vLLM's refusal of a positional argument, word for word (the vLLM decorator's interface.refusal).
REFUSAL_PATTERN = re.compile(
    r"received a positional argument of type '.*', "
    r"but no parameter of that type was found in the method signature"
)
# The pickling bug the pickle check shows: an ImportError, but not a package to install.
MISSING_DYNAMIC_MODULE = "No module named 'transformers_modules"
# Exceptions of optional packages, recognised by class name so that this module imports neither.
_TRANSPORT_TIMEOUTS = {"GetTimeoutError"}  # Ray's
_TASK_RULES: tuple[tuple[frozenset[str], Status, str], ...] = (  # Ray's, matched along the MRO
    (frozenset({"OutOfMemoryError"}), Status.OOM,
     "OutOfMemory: Ray's memory monitor killed the worker (its node ran short of memory)"),
    (frozenset({"WorkerCrashedError"}), Status.CRASH,
     "Crash: the Ray worker process died, also on the retry ({name})"),
    # The executor's own failures, never the model's: the node (its raylet) under the task died,
    # or our task code raised (run_case reports every error of a model type as a message).
    (frozenset({"NodeDiedError", "LocalRayletDiedError"}), Status.AUDITOR_ERROR,
     "ExecutorError: the Ray node running the task died ({name}); not the model's doing"),
    (frozenset({"RayTaskError"}), Status.AUDITOR_ERROR,
     "ExecutorError: the Ray task failed: {cause}"),
)


def classify(exc: BaseException, phase: Phase = Phase.BUILD, *,
             decorator_files: frozenset[str] = frozenset(), engine_package: str = "") -> Failure:
    """The failure `exc` stands for, raised in `phase`, with whose fault it is.

    `decorator_files` (Phase.DECORATED): the files of the decorator under audit, so that an
    exception raised in its own code is a check-error rather than the model's error.
    `engine_package` (Phase.ENGINE): the import name of the engine whose step raised, so that an
    exception raised in its installed code is the engine's.
    """
    if phase is Phase.TASK:
        return _task_failure(exc)
    if isinstance(exc, EngineRefusal):  # an emulated gate refusing, as the engine would
        # Raised on behalf of a copied engine line (`raise EngineRefusal(...) from exc`): where that
        # line's own exception was raised, not the raise statement.
        return Failure(Status.UNSUPPORTED, exc.message, signature_of(exc.message), Fault.ENGINE,
                       {**_raised(exc.__cause__ or exc, "refusal"), **exc.extras})
    if not isinstance(exc, StatusError) and not is_refusal(exc) and not raised_in(exc, decorator_files):
        # At an engine's step every exception the auditor's own frames raise is ours: the
        # emulation refuses with EngineRefusal, so anything else there is a bug of ours.
        at = _bug_at(exc, None if phase is Phase.ENGINE else _BUG_TYPES)
        if at:
            message = message_of(exc)
            return Failure(Status.AUDITOR_ERROR, f"{message} [auditor bug at {at}]", signature_of(message),
                           Fault.AUDITOR, {"raised_at": at, "raised_by": Origin.AUDITOR.value})
    failure = exc.failure if isinstance(exc, StatusError) else _plain(exc, engine_package)
    if phase is Phase.CONFIG and failure.status is Status.ERROR:
        return _with(failure, Status.CONFIG_ERROR)
    if phase is Phase.DECORATED and not isinstance(exc, StatusError):
        if is_refusal(exc):
            return _with(failure, Status.REFUSED)
        if raised_in(exc, decorator_files):
            return _with(failure, Status.CHECK_ERROR)
    if phase is Phase.EAGER and not failure.environmental:
        return _with(failure, Status.EAGER_ERROR)
    if phase is Phase.COMPILE and not failure.environmental:
        return _with(failure, _compile_status(exc))
    if phase is Phase.TRANSPORT:
        if type(exc).__name__ in _TRANSPORT_TIMEOUTS:
            return _with(failure, Status.TIMEOUT)
        if MISSING_DYNAMIC_MODULE in failure.message:
            # Remote code shipped by reference: the receiving process cannot import it. How an
            # engine ships configs decides it (by value works), not the model.
            return _with(failure, Status.ERROR, Fault.ENGINE)
        if failure.status is Status.NEEDS_HUB and not isinstance(exc, StatusError):
            # Raised here, not reported by the far side: a round trip fetches nothing, so a
            # connection that failed is the executor's (the sweep's Ray cluster), not the hub's.
            return _with(failure, Status.AUDITOR_ERROR)
    if phase is Phase.ENGINE and failure.status is Status.ERROR and not isinstance(exc, StatusError):
        return _at_engine_step(exc, failure, engine_package)
    return failure


def _at_engine_step(exc: BaseException, failure: Failure, engine_package: str = "") -> Failure:
    """What an engine's step raised on a model that builds on its own: the engine stops there.
    Raised in the engine's code (or the auditor's copy of it), or a per-layer attribute the
    engine reads globally: the engine's. Raised in transformers or model code: the pairing's,
    the message naming the model's line (the lookup that failed)."""
    by = failure.extras.get("raised_by")
    read = failure.extras.get("per_layer")
    if read:
        message = per_layer_message(engine_package or "the engine", read["attribute"], read["read_at"], failure.message)
        return Failure(Status.UNSUPPORTED, message, signature_of(message), Fault.ENGINE, failure.extras)
    if by == Origin.ENGINE.value and ENGINE_LINE not in failure.message and failure.extras.get("raised_at"):
        message = f"{failure.message} [{ENGINE_LINE} {failure.extras['raised_at']}]"  # the engine's own code
        return Failure(Status.UNSUPPORTED, message, failure.signature, Fault.ENGINE, failure.extras)
    if by in (Origin.ENGINE.value, Origin.AUDITED.value):
        return _with(failure, Status.UNSUPPORTED, Fault.ENGINE)
    line = source_line(exc)
    at = failure.extras.get("raised_at", "")
    if line.startswith("raise "):  # the message says what was raised: the place is what is new
        line = ""
    message = f"{failure.message} [{MODEL_LINE} {at}{': ' + line if line else ''}]" if at else failure.message
    return Failure(Status.UNSUPPORTED, message, failure.signature, Fault.PAIRING, failure.extras)


def _raised(exc: BaseException, by: str, engine_package: str = "") -> dict:
    """Where `exc` was raised and by whom, as a row's extras record it."""
    found = innermost(exc)
    extras = {"raised_at": place(*found), "raised_by": by or origin_of_frame(found[0], engine_package).value} \
        if found else {}
    read = per_layer_read(exc)
    if read is not None:
        extras["per_layer"] = {"attribute": read[0], "read_at": read[1]}
    return extras


def _plain(exc: BaseException, engine_package: str = "") -> Failure:
    """A failure judged by the exception alone: the rules every phase starts from."""
    message = message_of(exc)
    extras = _raised(exc, "", engine_package)
    copied = transcribed_raise(exc)
    if copied is not None:  # the engine's line, as if the engine had run it
        transcription, at = copied
        extras["transcribed"] = {"engine": transcription.engine, "release": transcription.release,
                                 "where": transcription.where, "step": transcription.step}
        return Failure(_plain_status(exc), f"{message} {transcription.note(at)}", signature_of(message),
                       Fault.ENGINE, extras)
    broken = broken_import(exc, engine_package)
    if broken and not isinstance(exc, ImportError):
        extras["broken_import"] = broken
        return Failure(Status.MISSING_DEPENDENCY, f"{message} [raised importing {broken}: an installed package "
                       "that does not import here]", signature_of(message), None, extras)
    return Failure(_plain_status(exc), message, signature_of(message), None, extras)


def _plain_status(exc: BaseException) -> Status:
    name = type(exc).__name__
    if sticky_device_error(f"{name}: {exc}"):
        return Status.DEVICE_ERROR
    text = f"{name}: {exc}".lower()
    if name in _OOM_TYPES or "out of memory" in text or "can't allocate memory" in text:
        return Status.OOM
    if name in _HUB_TYPES or any(marker in text for marker in _HUB_MARKERS):
        return Status.NEEDS_HUB
    if isinstance(exc, ImportError) or _names_missing_package(text):
        return Status.MISSING_DEPENDENCY
    if any(marker in text for marker in _UNDECIDABLE):
        return Status.UNDECIDED
    return Status.ERROR


# The accelerator's errors that leave its process's context unusable: torch raises them as
# `torch.AcceleratorError` (older releases: a RuntimeError with the same text), and every later
# kernel of that process fails with the same error. c10's list of CUDA's asynchronous errors.
_STICKY_DEVICE = re.compile(r"\bAcceleratorError\b|CUDA error: (?:device-side assert triggered|an illegal memory "
                            r"access was encountered|unspecified launch failure|an illegal instruction was "
                            r"encountered|misaligned address)")


def sticky_device_error(message: str) -> bool:
    """Whether `message` (a row's, or `Type: text` of an exception) is a sticky device error: the
    process that met it can run nothing more on its device (auditor.executors.worker retires it)."""
    return _STICKY_DEVICE.search(message) is not None


def _names_missing_package(text: str) -> bool:
    # transformers' requires_backends raises ImportError, but some code re-raises it wrapped.
    return "requires the" in text and "library but it was not found" in text


def _with(failure: Failure, status: Status, fault: Fault | None = None) -> Failure:
    """`failure` under another status; its fault that status's default unless given."""
    return Failure(status, failure.message, failure.signature, fault, failure.extras)


def _compile_status(exc: BaseException) -> Status:
    """What compiling raised: a recompile (or a marked dim specialized), a graph break, or
    another dynamo or backend error."""
    import torch._dynamo.exc as dynamo

    if isinstance(exc, dynamo.RecompileError) or specialized(exc):
        return Status.RECOMPILED
    if isinstance(exc, dynamo.Unsupported):
        return Status.GRAPH_BREAK
    return Status.COMPILE_ERROR


def specialized(exc: BaseException) -> bool:
    """Whether compiling specialized a dim the decorator marked dynamic (a constraint violation)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = f"{type(exc).__name__}: {exc}"
        if "ConstraintViolation" in text or "Constraints violated" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _task_failure(exc: BaseException) -> Failure:
    names = {klass.__name__ for klass in type(exc).__mro__ if klass.__module__.partition(".")[0] == "ray"}
    for types, status, template in _TASK_RULES:
        if names & types:
            cause = getattr(exc, "cause", None) or exc
            return Failure.because(status, template.format(name=type(exc).__name__, cause=summary(cause)))
    return Failure.because(Status.CRASH, f"Crash: {summary(exc)}")




def is_refusal(exc: BaseException) -> bool:
    """Whether `exc` is a decorator's own refusal (not some other TypeError)."""
    return isinstance(exc, TypeError) and REFUSAL_PATTERN.search(str(exc)) is not None


# Exceptions that mean a programming error where they are raised. The auditor raises its
# deliberate verdicts as StatusErrors, EngineRefusals or ValueErrors, never as these.
_BUG_TYPES = (AttributeError, ImportError, NameError, TypeError, KeyError, IndexError, AssertionError)


def auditor_bug_at(exc: BaseException) -> str:
    """`file.py:line` when `exc` is a programming error raised by the auditor's own code (an
    attribute or import transformers does not have, a wrong call), not by the model's; "" else.

    Judged by the innermost frame that is not plumbing (auditor.core.fault): standard-library
    frames (importlib's `from x import y`, typing) and torch's `Module.__getattr__` (which raises
    the missing attribute the auditor asked for) are skipped; a frame inside transformers, torch
    or model code means the model failed; a module marked AUDITED is the audited code's.
    """
    return _bug_at(exc, _BUG_TYPES)


def raised_in(exc: BaseException, files: frozenset[str]) -> bool:
    """Whether the innermost non-stdlib frame of `exc`'s traceback is in one of `files`.

    Standard-library frames are skipped because `isinstance(x, typing.Callable[...])`
    or `isinstance(x, typing.Any)` raises inside typing.py, called from the check.
    """
    if not files:
        return False
    own = {os.path.realpath(path) for path in files}
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not _is_stdlib(frame.filename):
            return os.path.realpath(frame.filename) in own
    return False
