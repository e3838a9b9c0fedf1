"""How a failure is written: its message (`Type: text`, bounded), the signature that groups the
same failure across model types (the message with numbers, paths, hex ids and class-like names
masked), and the place notes `classify` appends to a message (where, not what)."""

from __future__ import annotations

import re

from auditor.core.fault import ENGINE_LINE

MESSAGE_LIMIT = 2000

def message_of(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…"


_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"<(class|function|module|bound method) '?[^>]*'?>"), r"<\1 ?>"),
    # A path starts at a slash of its own: `backend/sglang/attention-backend`, a gate, stays whole.
    (re.compile(r"(?<![\w.\-])(?:[A-Za-z]:)?(?:/[\w.\-+@~]+){2,}/?"), "<path>"),
    # A quoted class name whatever its spelling ('GPT2Model.__init__', 'Qwen2_5_VLTextConfig'), so that
    # one cause (the decorator's positional-argument refusal) is one signature.
    (re.compile(r"'(?!(?:None|NoneType|True|False)')[A-Z][A-Za-z0-9_]*((?:\.\w+)*)'"), r"'<Name>\1'"),
    # CamelCase classes; an exception's class name stays, to be searched for (KeyError, ...PerLayerAttributeError)
    (re.compile(r"\b(?!NoneType\b)(?!\w*(?:Error|Exception|Warning)\b)[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b"),
     "<Name>"),
    (re.compile(r"\b[\w.]*transformers_modules[\w.\-]*"), "transformers_modules.?"),
    (re.compile(r"-?\b\d+(?:\.\d+)?(?:e-?\d+)?\b"), "N"),
    (re.compile(r"\s+"), " "),
)


# The places `classify` appends to a message ("[raised in the model's code at FILE:LINE: code]",
# "[auditor bug at FILE:LINE]"): where, not what, so no part of a signature.
MODEL_LINE = "raised in the model's code at"
_PLACE_NOTE = re.compile(r" \[(?:" + re.escape(MODEL_LINE) + "|" + re.escape(ENGINE_LINE) + r"|auditor bug at) .*\]$",
                         re.S)


def without_place(message: str) -> str:
    """The message without the place note `classify` appended (where it was raised, not what)."""
    return _PLACE_NOTE.sub("", message)


def signature_of(message: str) -> str:
    """Normalize a message (`Type: text`) so that the same failure in two models looks the same."""
    head, sep, rest = without_place(message).partition(": ")
    if not sep:
        return head.strip()
    for pattern, replacement in _MASKS:
        rest = pattern.sub(replacement, rest)
    rest = rest.strip()
    if len(rest) > 200:
        rest = rest[:199] + "…"
    return f"{head}: {rest}"

def summary(exc: BaseException) -> str:
    """`Type: message`, on one line (a RayTaskError's text is a whole traceback: its last line)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"
