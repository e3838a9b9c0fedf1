"""A failure's cause: the signature a report groups cells by; and the text a finding shows.

A row's signature (auditor.core.messages.signature_of) masks what differs between two cells of one
cause (numbers, paths, class names of any spelling; a gate's name stays whole), so a cause is the
signature of the message's first line where that line is `Type: text` (a traceback after it says
nothing of the cause), and a skip's "not reached: <engine> stops at <gate>" as it is. Rows of files
written by an earlier auditor keep the signatures they were written with; grouping reads the message
again, so their causes are today's.

A signature is for grouping, never for reading: it says `max abs diff N` where the row says
`max abs diff 0.578`. What a report shows of one finding is `finding_text`, the row's own message.
"""

from __future__ import annotations

from functools import lru_cache

from auditor.core.messages import signature_of

# How the backend check words a gate that another one stopped (auditor.engines.interface).
NOT_REACHED = "not reached: "


@lru_cache(maxsize=65536)  # many cells share a message
def cause_of(message: str, signature: str = "") -> str:
    """The cause of a failure with this message (its signature when there is no message)."""
    text = message.strip() or signature
    if text.startswith(NOT_REACHED):
        return text.splitlines()[0]
    if not message.strip():
        return signature
    return signature_of(text.splitlines()[0] if _one_line(text) else text)


def _one_line(text: str) -> bool:
    """A message whose first line is `Type: text`: its traceback, if any, says nothing of the cause."""
    return ": " in text.splitlines()[0]


def finding_text(message: str, signature: str = "") -> str:
    """What a report shows of one finding: its own message, whole, on one line (its signature only
    where the row has no message). Reports group by `cause_of`; they show this."""
    return " ".join(message.split()) or signature
