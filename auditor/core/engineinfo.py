"""What a run's header records of each serving engine it checked (EngineInfo).

The reports must judge a model type by the engine's own rule (which gates stop it), and they may
import only `core`: so a sweep writes, into its header, what each `Engine` (auditor.engines)
said at the time: its versions, its gates in order, which of them stop it, and the policy of its
own-code rows. A report reads that record, never a copy of the rule; a run is judged by the rule
of the auditor that wrote it, as its rows were. Runs written before the record existed have none
(no verdicts, no versions shown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EMULATED = "emulated"  # the version of an engine that is not installed: only its emulation ran
# A gate row's extras key: the gate's step raised (rather than returned a verdict). The engine's
# constructor raises with it, so the engine stops there even at a gate that stops nothing when it
# only answers "no" (`EngineInfo.raising`; auditor.engines.interface.safely sets it).
RAISED = "raised"


def stops(stopping: bool, raising: bool, failed: bool, extras: Mapping[str, Any]) -> bool:
    """The one rule of where an engine stops a model: at a gate that failed, where the gate stops
    it (`stopping`: its refusal does), or where its step raised and the engine runs that step as
    it serves the model (`raising`)."""
    return failed and (stopping or (raising and bool(extras.get(RAISED))))


@dataclass(frozen=True)
class EngineInfo:
    """One engine as a run met it.

    `version`: the installed engine's version, or "emulated"; `follows`: the engine version its
    emulation follows (the gates' code and messages are that version's); `gates`: the backend
    check's components of this engine, in the order it meets a model; `stopping`: those whose
    failure means it never serves the type; `raising`: those whose step the engine runs as it
    serves the type, so that the step raising stops it (a row marked RAISED; empty in runs
    written before the rule, which keep their meaning); `policy`: the policy of the rows its own
    functions computed (the engine's decorator policy)."""

    name: str
    title: str
    version: str
    follows: str
    gates: tuple[str, ...]
    stopping: tuple[str, ...]
    policy: str
    shims: tuple[str, ...] = ()  # "name: what it stands in for", the environment shims its own code ran under
    # "component: file:line" of each gate in the followed release's wheel, from its release record
    sources: tuple[str, ...] = ()
    raising: tuple[str, ...] = ()

    def stops_at(self, component: str, failed: bool, extras: Mapping[str, Any]) -> bool:
        """Whether the engine stops at the gate of `component` with a row that failed (`stops`)."""
        return stops(component in self.stopping, component in self.raising, failed, extras)

    def source(self, column: str) -> str:
        """Where the followed release has the gate of `column` (`backend/<component>[/<policy>]`):
        "vllm/config/model.py:1149-1177"; "" where the record says nothing."""
        component = column.removeprefix("backend/")
        if self.policy:
            component = component.removesuffix(f"/{self.policy}")
        return dict(s.split(": ", 1) for s in self.sources).get(component, "")

    @property
    def installed(self) -> bool:
        return self.version != EMULATED

    @property
    def text(self) -> str:
        """`vLLM 0.33.0 (installed; emulation follows 0.33.0)` or `vLLM emulated (follows 0.33.0)`."""
        if self.installed:
            shims = f"; shims: {', '.join(s.split(':')[0] for s in self.shims)}" if self.shims else ""
            return f"{self.title} {self.version} (installed; emulation follows {self.follows}{shims})"
        return f"{self.title} {EMULATED} (follows {self.follows})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "version": self.version, "follows": self.follows,
                "gates": list(self.gates), "stopping": list(self.stopping), "policy": self.policy,
                **({"shims": list(self.shims)} if self.shims else {}),
                **({"sources": list(self.sources)} if self.sources else {}),
                **({"raising": list(self.raising)} if self.raising else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngineInfo:
        return cls(name=data["name"], title=data["title"], version=data["version"], follows=data["follows"],
                   gates=tuple(data["gates"]), stopping=tuple(data["stopping"]), policy=data.get("policy", ""),
                   shims=tuple(data.get("shims", ())), sources=tuple(data.get("sources", ())),
                   raising=tuple(data.get("raising", ())))
