"""The status vocabulary, and the one place that turns an exception into a status.

`Status` is every cell's verdict; its values are the exact strings of every output, and its
descriptions are the ones the report and the README show (a test holds the README to them).

`classify(exc, phase)` is the only exception -> status rule of the auditor. Callers say *where*
the exception came from (a `Phase`: making the config, building, decorating, running eagerly,
compiling, sending to another process, losing a task), never how to judge it; the rules, in
tables where they can be, are all here. It returns a `Failure`: status, message and signature,
the triple every failed row carries. The signature groups identical failures across model
types: the error type plus the message with numbers, paths, hex ids, quoted names and
class-like names masked.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from dataclasses import dataclass
from enum import Enum

MESSAGE_LIMIT = 2000


class Status(str, Enum):
    """The shared status vocabulary; the values are the exact strings in every output."""

    BUILD = "build"
    REFUSED = "refused"
    CHECK_ERROR = "check-error"
    DECORATE_ERROR = "decorate-error"
    ERROR = "error"
    CONFIG_ERROR = "config-error"
    MISSING_DEPENDENCY = "missing-dependency"
    NEEDS_HUB = "needs-hub"
    TIMEOUT = "timeout"
    CRASH = "crash"
    OOM = "oom"
    SKIPPED = "skipped"
    # The auditor's own code failed: a bug of ours, never the model's (the message says where).
    AUDITOR_ERROR = "auditor-error"
    # The backend check: a serving engine would stop at this gate.
    UNSUPPORTED = "unsupported"
    # Outcomes of the compile check (a failed build there keeps the statuses above).
    COMPILED = "compiled"
    GRAPH_BREAK = "graph-break"
    RECOMPILED = "recompiled"
    SPECIALIZED = "specialized"
    MISMATCH = "mismatch"
    EAGER_ERROR = "eager-error"
    COMPILE_ERROR = "compile-error"

    def __str__(self) -> str:
        return self.value

    @property
    def ok(self) -> bool:
        """`build` and `compiled` are passes; every other status is a finding."""
        return self in (Status.BUILD, Status.COMPILED)

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self]


DESCRIPTIONS: dict[Status, str] = {
    Status.BUILD: "built (for non-build checks: passed)",
    Status.REFUSED: "the compile decorator refused the build with its own `TypeError`",
    Status.CHECK_ERROR: "the decorator's own positional check crashed",
    Status.DECORATE_ERROR: "the class could not be decorated at all",
    Status.ERROR: "the model itself failed to build",
    Status.CONFIG_ERROR: "the default config cannot be made",
    Status.MISSING_DEPENDENCY: "an `ImportError`, e.g. timm, natten, detectron2, torchaudio, pillow",
    Status.NEEDS_HUB: "it wanted the Hugging Face hub while offline",
    Status.TIMEOUT: "no result within `--timeout`",
    Status.CRASH: "the worker process died (segfault, `os._exit`); the message says how",
    Status.OOM: "`MemoryError`, or the worker went over `--max-memory`",
    Status.SKIPPED: "the check does not apply; the message says why",
    Status.AUDITOR_ERROR: "the auditor's own code or its executor failed (not the model's): the message names the auditor line, or says `ExecutorError` (a Ray cluster or node that died under the worker)",
    Status.UNSUPPORTED: "backend check: a serving engine's gate refused the model, with the engine's own message",
    Status.COMPILED: "compile check: one graph for every sequence length, output equal to eager (OK, like `build`)",
    Status.GRAPH_BREAK: "compile check: `torch.compile(fullgraph=True)` hit a graph break; extras say why and where",
    Status.RECOMPILED: "compile check (plain semantics): the second sequence length needed another graph",
    Status.SPECIALIZED: "compile check (engine semantics): the graph compiled at the first length crashed, or gave "
                        "another output, at a later length (the message says which), or the first compile "
                        "specialized a dim marked dynamic",
    Status.MISMATCH: "compile check: compiled and eager outputs differ beyond the dtype's tolerance",
    Status.EAGER_ERROR: "compile check: the forward fails even without compiling",
    Status.COMPILE_ERROR: "compile check: tracing or the backend failed in another way (a dynamo or inductor error)",
}

# The machine's fault, not the model's and not the phase's: kept whatever phase raised them
# (a missing package is not a graph break), and no other tiny size would help.
ENVIRONMENTAL = frozenset({Status.OOM, Status.MISSING_DEPENDENCY, Status.NEEDS_HUB})


@dataclass(frozen=True)
class Failure:
    """Why something did not pass, as a row says it."""

    status: Status
    message: str
    signature: str

    @classmethod
    def because(cls, status: Status, message: str) -> Failure:
        """A failure the auditor states itself (a death, a skip), its signature derived."""
        return cls(status, message, signature_of(message))

    @property
    def environmental(self) -> bool:
        return self.status in ENVIRONMENTAL


class StatusError(Exception):
    """An exception that already knows its row: the far side's report, a decorator's refusal
    to decorate. `classify` takes its failure as it is (then applies the phase's rules)."""

    def __init__(self, failure: Failure, text: str = "") -> None:
        super().__init__(text or failure.message)
        self.failure = failure

    @property
    def status(self) -> Status:
        return self.failure.status

    @property
    def message(self) -> str:
        return self.failure.message

    @property
    def signature(self) -> str:
        return self.failure.signature


class Phase(str, Enum):
    """Where an exception came from: the context `classify` judges it in."""

    CONFIG = "config"  # making the default config: a plain error is a config-error
    BUILD = "build"  # building a model without a decorator, or a check's own step
    DECORATED = "decorated"  # decorating a class, or building with decorated classes
    EAGER = "eager"  # running the tiny model without compiling
    COMPILE = "compile"  # compiling it and running it compiled
    TRANSPORT = "transport"  # sending a config to another process (receiver, Ray) and back
    TASK = "task"  # an executor lost a model type's task (Ray)


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
# vLLM's refusal of a positional argument, word for word (auditor.decorators.interface.refusal).
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
             decorator_files: frozenset[str] = frozenset()) -> Failure:
    """The failure `exc` stands for, raised in `phase`.

    `decorator_files` (Phase.DECORATED): the files of the decorator under audit, so that an
    exception raised in its own code is a check-error rather than the model's error.
    """
    if phase is Phase.TASK:
        return _task_failure(exc)
    if not isinstance(exc, StatusError) and not is_refusal(exc) and not raised_in(exc, decorator_files):
        where = auditor_bug_at(exc)
        if where:
            message = message_of(exc)
            return Failure(Status.AUDITOR_ERROR, f"{message} [auditor bug at {where}]", signature_of(message))
    failure = exc.failure if isinstance(exc, StatusError) else _plain(exc)
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
            return _with(failure, Status.ERROR)
        if failure.status is Status.NEEDS_HUB and not isinstance(exc, StatusError):
            # Raised here, not reported by the far side: a round trip fetches nothing, so a
            # connection that failed is the executor's (the sweep's Ray cluster), not the hub's.
            return _with(failure, Status.AUDITOR_ERROR)
    return failure


def _plain(exc: BaseException) -> Failure:
    """A failure judged by the exception alone: the rules every phase starts from."""
    message = message_of(exc)
    return Failure(_plain_status(exc), message, signature_of(message))


def _plain_status(exc: BaseException) -> Status:
    name = type(exc).__name__
    text = f"{name}: {exc}".lower()
    if name in _OOM_TYPES or "out of memory" in text or "can't allocate memory" in text:
        return Status.OOM
    if name in _HUB_TYPES or any(marker in text for marker in _HUB_MARKERS):
        return Status.NEEDS_HUB
    if isinstance(exc, ImportError) or _names_missing_package(text):
        return Status.MISSING_DEPENDENCY
    return Status.ERROR


def _names_missing_package(text: str) -> bool:
    # transformers' requires_backends raises ImportError, but some code re-raises it wrapped.
    return "requires the" in text and "library but it was not found" in text


def _with(failure: Failure, status: Status) -> Failure:
    return Failure(status, failure.message, failure.signature)


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


def summary(exc: BaseException) -> str:
    """`Type: message`, on one line (a RayTaskError's text is a whole traceback: its last line)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"


def is_refusal(exc: BaseException) -> bool:
    """Whether `exc` is a decorator's own refusal (not some other TypeError)."""
    return isinstance(exc, TypeError) and REFUSAL_PATTERN.search(str(exc)) is not None


_STDLIB = os.path.dirname(os.path.abspath(os.__file__))
_AUDITOR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the auditor package
# Where the auditor emulates or wraps the thing under audit, the module (or its package's
# __init__) says so with a top-level `AUDITED = True` (the decorators package, an engine's
# decorator adapter): the decorator's own failures there are the decorator's (refused,
# check-error), not an auditor bug.
AUDITED_MARK = "AUDITED"
# Exceptions that mean a programming error where they are raised. The auditor raises its
# deliberate verdicts as StatusErrors or ValueErrors, never as these.
_BUG_TYPES = (AttributeError, ImportError, NameError, TypeError, KeyError, IndexError, AssertionError)


def auditor_bug_at(exc: BaseException) -> str:
    """`file.py:line` when `exc` is a programming error raised by the auditor's own code (an
    attribute or import transformers does not have, a wrong call), not by the model's; "" else.

    Judged by the innermost frame that is not plumbing: standard-library frames (importlib's
    `from x import y`, typing) and torch's `Module.__getattr__` (which raises the missing
    attribute the auditor asked for) are skipped; a frame inside transformers, torch or model
    code means the model failed.
    """
    if not isinstance(exc, _BUG_TYPES) or isinstance(exc, ModuleNotFoundError):
        return ""
    for frame, lineno in reversed(list(traceback.walk_tb(exc.__traceback__))):
        filename = frame.f_code.co_filename
        if _is_stdlib(filename) or (frame.f_code.co_name == "__getattr__" and
                                    filename.endswith(os.path.join("torch", "nn", "modules", "module.py"))):
            continue
        path = os.path.abspath(filename)
        if path.startswith(_AUDITOR + os.sep) and not _audited(frame.f_globals):
            return f"{os.path.relpath(path, os.path.dirname(_AUDITOR))}:{lineno}"
        return ""
    return ""


def _audited(module_globals: dict) -> bool:
    """Whether a frame's module, or the package it is in, carries the AUDITED mark."""
    if module_globals.get(AUDITED_MARK) is True:
        return True
    package = sys.modules.get(module_globals.get("__package__") or "")
    return getattr(package, AUDITED_MARK, False) is True


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


def _is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen abc>, <string>, ...
        return True
    path = os.path.abspath(filename)
    parts = path.split(os.sep)
    return path.startswith(_STDLIB + os.sep) and "site-packages" not in parts and "dist-packages" not in parts


# -- messages and signatures -------------------------------------------------------------------


def message_of(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…"


_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"<(class|function|module|bound method) '?[^>]*'?>"), r"<\1 ?>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-+@~]+){2,}/?"), "<path>"),
    (re.compile(r"\b(?!NoneType\b)[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b"), "<Name>"),  # CamelCase classes
    (re.compile(r"\b[\w.]*transformers_modules[\w.\-]*"), "transformers_modules.?"),
    (re.compile(r"-?\b\d+(?:\.\d+)?(?:e-?\d+)?\b"), "N"),
    (re.compile(r"\s+"), " "),
)


def signature_of(message: str) -> str:
    """Normalize a message (`Type: text`) so that the same failure in two models looks the same."""
    head, sep, rest = message.partition(": ")
    if not sep:
        return head.strip()
    for pattern, replacement in _MASKS:
        rest = pattern.sub(replacement, rest)
    rest = rest.strip()
    if len(rest) > 200:
        rest = rest[:199] + "…"
    return f"{head}: {rest}"
