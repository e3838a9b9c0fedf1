"""Typed records of what readers take from `Result.extras`.

The checks write extras as plain JSON keys, and results.jsonl keeps them so (old runs stay
readable, and no row changes). Readers do not look keys up by string: each thing a report reads
has a small frozen record here with a `from_extras(extras)` constructor, so that a key is spelled
in one reader place and a record says what its fields are. (Whether a row fails by design, the
`expected` key, is part of the outcome rule: auditor.core.outcome.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class ModelFacts:
    """What a build row says of the model it built on meta (auditor.models.meta.model_facts);
    None where the row does not say (a failed build, another check's row)."""

    model_class: str | None = None
    parameters: int | None = None
    parameter_bytes: int | None = None
    escaped: int | None = None  # tensors that left the meta device

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any]) -> ModelFacts:
        return cls(extras.get("model_class"), extras.get("parameters"), extras.get("parameter_bytes"),
                   extras.get("escaped"))


@dataclass(frozen=True, eq=False)
class Fingerprint:
    """What a serving engine reads of a model type's default config, from its build row
    (auditor.models.fingerprint): the canonical config, the class attributes engines use, the
    sub-config names, and a digest of them all so that equal fingerprints compare in one step.
    The values are the JSON data as written (dicts and lists), compared as they are."""

    digest: str | None
    config: Mapping[str, Any] = field(default_factory=dict)
    attribute_map: Mapping[str, Any] = field(default_factory=dict)
    tp_plan: Mapping[str, Any] = field(default_factory=dict)  # base_model_tp_plan
    pp_plan: Mapping[str, Any] = field(default_factory=dict)  # base_model_pp_plan
    sub_configs: list[str] | None = None  # None: the fingerprint does not say

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any]) -> Fingerprint | None:
        """The row's fingerprint; None for a row without one (a failed build, an older auditor)."""
        data = extras.get("fingerprint")
        if not data:
            return None
        return cls(data.get("digest"), data.get("config", {}), data.get("attribute_map") or {},
                   data.get("base_model_tp_plan") or {}, data.get("base_model_pp_plan") or {},
                   data.get("sub_configs"))

    @property
    def plans(self) -> tuple[tuple[str, Mapping[str, Any]], ...]:
        """The class attributes compared entry by entry, under the names drift reports use."""
        return (("attribute-map", self.attribute_map), ("tp-plan", self.tp_plan), ("pp-plan", self.pp_plan))


class BreakOwner(str, Enum):
    """Whose code a graph break is in: who has to change a line for the break to go."""

    MODEL = "model"  # the model's own files: transformers/models/<x>/, remote code, a plugin's module
    TRANSFORMERS = "transformers"  # a module transformers' models share: masking_utils, integrations/...
    TORCH = "torch"
    AUDITOR = "auditor"  # the auditor's own code (its decorator, its attention): a bug of ours

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, file: str) -> BreakOwner | None:
        """The owner of `file` as a break record spells it (auditor.checks.compile_breaks writes
        the packages it knows as `torch/...`, `transformers/...`, `auditor/...`; any other path
        after `site-packages/`); None for no file. A file of no package named here is the model's:
        a plugin's module, or what a model's own code chose to call."""
        if not file:
            return None
        if file.startswith("transformers_modules/") or "/transformers_modules/" in file:
            return cls.MODEL  # remote code, wherever its cache is
        head, _, rest = file.partition("/")
        if head == "transformers":
            parts = rest.split("/")
            own = len(parts) >= 3 and parts[0] == "models" and parts[1] != "auto"  # auto/ serves every model
            return cls.MODEL if own else cls.TRANSFORMERS
        return {"torch": cls.TORCH, "auditor": cls.AUDITOR}.get(head, cls.MODEL)


_LOCATION = re.compile(r"^(?P<file>.*):(?P<line>\d+) in (?P<function>.*)$")


@dataclass(frozen=True)
class GraphBreak:
    """One graph break of a compiled component (a `graph-break` row of the compile check): the
    first lines of dynamo's reason, and the user frame it points at, with the owner of that
    frame's file (derived from `file` unless given). A row keeps every break under `breaks` (a
    list of `as_extras()` dicts) and, as older rows did, the first one fullgraph met under
    `break_reason` and `break_location`."""

    reason: str
    file: str = ""
    line: int | None = None
    function: str = ""
    owner: BreakOwner | None = None

    def __post_init__(self) -> None:
        if self.owner is None:
            object.__setattr__(self, "owner", BreakOwner.of(self.file))

    @property
    def location(self) -> str:
        """`file:line in function`, as `break_location` spells it; "" where the break has no frame."""
        return f"{self.file}:{self.line} in {self.function}" if self.file else ""

    def as_extras(self) -> dict[str, Any]:
        return {"reason": self.reason, "file": self.file, "line": self.line, "function": self.function,
                "owner": self.owner.value if self.owner else None}

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any]) -> GraphBreak | None:
        """The first break, as fullgraph met it (`break_reason`, `break_location`); None for a row
        without one."""
        reason = extras.get("break_reason")
        if not reason:
            return None
        found = _LOCATION.match(extras.get("break_location") or "")
        if not found:
            return cls(reason)
        return cls(reason, found["file"], int(found["line"]), found["function"])


def breaks_of(extras: Mapping[str, Any]) -> tuple[GraphBreak, ...]:
    """Every graph break a row lists (`breaks`), in the order dynamo met them; a row of an older
    auditor, which kept only the first, gives that one; a row without a break gives none."""
    listed = extras.get("breaks")
    if listed:
        return tuple(GraphBreak(b.get("reason") or "", b.get("file") or "", b.get("line"), b.get("function") or "",
                                _owner(b.get("owner"))) for b in listed)
    first = GraphBreak.from_extras(extras)
    return (first,) if first else ()


def _owner(value: str | None) -> BreakOwner | None:
    """A stored owner; one this auditor does not know (a later one's) is derived again from the file."""
    try:
        return BreakOwner(value) if value else None
    except ValueError:
        return None
