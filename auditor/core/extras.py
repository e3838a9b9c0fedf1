"""Typed records of what readers take from `Result.extras`.

The checks write extras as plain JSON keys, and results.jsonl keeps them so (old runs stay
readable, and no row changes). Readers do not look keys up by string: each thing a report reads
has a small frozen record here with a `from_extras(extras)` constructor, so that a key is spelled
in one reader place and a record says what its fields are. (Whether a row fails by design, the
`expected` key, is part of the outcome rule: auditor.core.outcome.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class GraphBreak:
    """Where and why `torch.compile(fullgraph=True)` broke the graph (a `graph-break` row of the
    compile check): the first lines of dynamo's reason, and the user frame it points at."""

    reason: str
    location: str = ""

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any]) -> GraphBreak | None:
        reason = extras.get("break_reason")
        return cls(reason, extras.get("break_location") or "") if reason else None
