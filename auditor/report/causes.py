"""A failure's cause: the signature a report groups cells by.

A row's signature (auditor.core.status.signature_of) is what results.jsonl keeps and what an
expected baseline matches, so reports leave it as it is; to *group* failures they ask `cause_of`,
which reads the message again with two differences:

* a gate an engine stops at is its name, not a path: `not reached: SGLang stops at
  backend/sglang/attention-backend` stays whole (the signature masks it as `backend<path>`, so every
  SGLang gate looked like one cause);
* a quoted class name is masked whatever its spelling (`'GPT2Model.__init__'`, `'Qwen2_5_VLTextConfig'`,
  `['AriaModel']`): the signature masks only plain CamelCase, and the positional-argument refusal of
  vLLM's constructor split into a cause per spelling. The mask runs before the signature's cut at
  200 characters, so names of different lengths cut the same text at the same place.
"""

from __future__ import annotations

import re
from functools import lru_cache

from auditor.core.status import signature_of

# How the backend check words a gate that another one stopped (auditor.engines.interface).
NOT_REACHED = "not reached: "
_QUOTED_NAME = re.compile(r"'(?!(?:None|NoneType|True|False)')[A-Z][A-Za-z0-9_]*((?:\.\w+)*)'")


@lru_cache(maxsize=65536)  # many cells share a message
def cause_of(message: str, signature: str = "") -> str:
    """The cause of a failure with this message (its signature when there is no message)."""
    text = message.strip() or signature
    if text.startswith(NOT_REACHED):
        return text.splitlines()[0]
    if not message.strip():
        return signature
    return signature_of(_QUOTED_NAME.sub(r"'<Name>\1'", text.splitlines()[0] if _one_line(text) else text))


def _one_line(text: str) -> bool:
    """A message whose first line is `Type: text`: its traceback, if any, says nothing of the cause."""
    return ": " in text.splitlines()[0]
