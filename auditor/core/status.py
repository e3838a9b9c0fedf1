"""The one place that maps an exception to a Status, a short message and a signature.

The signature groups identical failures across model types: the error type plus
the message with numbers, paths, hex ids, quoted names and class-like names masked.
"""

from __future__ import annotations

import re

from auditor.core.results import Status

MESSAGE_LIMIT = 2000

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


def status_of(exc: BaseException) -> Status:
    """The status of a model whose build raised `exc` (outside any decorator)."""
    name = type(exc).__name__
    text = f"{name}: {exc}".lower()
    if name in _OOM_TYPES or "out of memory" in text:
        return Status.OOM
    if name in _HUB_TYPES or any(marker in text for marker in _HUB_MARKERS):
        return Status.NEEDS_HUB
    if isinstance(exc, ImportError) or _names_missing_package(text):
        return Status.MISSING_DEPENDENCY
    return Status.ERROR


def _names_missing_package(text: str) -> bool:
    # transformers' requires_backends raises ImportError, but some code re-raises it wrapped.
    return "requires the" in text and "library but it was not found" in text


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


def describe(exc: BaseException) -> tuple[Status, str, str]:
    """Status, message and signature of an exception, the triple every failed row carries."""
    message = message_of(exc)
    return status_of(exc), message, signature_of(message)
