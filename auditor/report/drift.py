"""Config drift between two runs: what changed in the default configs that engines read,
from the fingerprints in the build rows (auditor.models.fingerprint). Pure functions.

Per model type present in both runs with a fingerprint on both sides: keys removed, keys added,
keys renamed (a removed key and an added key with the same value, not None), defaults changed
(old and new value), attribute-map and parallel-plan entries changed, the model class and its
parameter count. Sub-config and parameter dicts are compared field by field (`text_config.hidden_size`,
`rope_parameters.rope_theta`).

A change that many types share (the generation fields a major release drops from every config)
would bury what is each type's own, so a change (same kind, key and values) found in at least
`SHARED_SHARE` of the compared types, and at least `SHARED_MIN` of them, is reported once as a
group (which change, how many types), and left out of each type's own list.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from auditor.core.extras import Fingerprint, ModelFacts
from auditor.core.results import Result, Run
from auditor.report.matrix import run_cells

SHARED_SHARE = 0.5
SHARED_MIN = 10
_MISSING = object()


@dataclass(frozen=True)
class Change:
    """One difference. kind: removed, added, renamed, changed (a config key); attribute-map,
    tp-plan, pp-plan, sub-configs (a class attribute); model-class, parameters."""

    kind: str
    key: str
    old: Any = None
    new: Any = None
    new_key: str = ""  # for renamed

    def text(self) -> str:
        if self.kind == "removed":
            return f"removed `{self.key}` (was {_show(self.old)})"
        if self.kind == "added":
            return f"added `{self.key}` = {_show(self.new)}"
        if self.kind == "renamed":
            return f"renamed `{self.key}` → `{self.new_key}` ({_show(self.new)})"
        if self.kind == "changed":
            if isinstance(self.old, list) and isinstance(self.new, list) and len(_show(self.old, 10**6)) > 80:
                return f"default of `{self.key}`: {_list_change(self.old, self.new)}"
            return f"default of `{self.key}`: {_show(self.old)} → {_show(self.new)}"
        what = {"model-class": "model class", "parameters": "parameters on meta"}.get(self.kind, self.kind)
        label = f"{what} `{self.key}`" if self.key else what
        return f"{label}: {_show(self.old)} → {_show(self.new)}"

    @property
    def identity(self) -> str:
        return json.dumps([self.kind, self.key, self.new_key, self.old, self.new], sort_keys=True, default=str)


@dataclass(frozen=True)
class TypeDrift:
    model_type: str
    changes: tuple[Change, ...]  # its own: shared changes left out
    shared: int = 0  # how many of the shared groups' changes it also has


@dataclass(frozen=True)
class SharedChange:
    change: Change
    model_types: tuple[str, ...]


@dataclass(frozen=True)
class Drift:
    compared: int  # model types with a fingerprint on both sides
    unfingerprinted: tuple[str, ...]  # in both runs, but without a fingerprint on one side
    types: tuple[TypeDrift, ...]  # those with a change of their own or a shared one
    shared: tuple[SharedChange, ...]

    @property
    def drifted(self) -> tuple[str, ...]:
        return tuple(t.model_type for t in self.types)

    def summary(self) -> str:
        if not self.compared:
            return "no config fingerprints to compare (sweeps without the build check, or of an older auditor)"
        own = sum(1 for t in self.types if t.changes)
        return (f"{len(self.types)} of {self.compared} model types' default configs changed"
                + (f" ({own} with changes of their own; {len(self.shared)} changes shared by many)"
                   if self.shared else ""))


def config_drift(base: Run, new: Run) -> Drift:
    before, after = _build_rows(base), _build_rows(new)
    common = sorted(set(before) & set(after))
    per_type: dict[str, list[Change]] = {}
    unfingerprinted = []
    for model_type in common:
        b, a = before[model_type], after[model_type]
        fb, fa = Fingerprint.from_extras(b.extras), Fingerprint.from_extras(a.extras)
        if fb is None or fa is None:
            unfingerprinted.append(model_type)
            continue
        per_type[model_type] = compare(b, a) if fb.digest != fa.digest or _fact_changes(b, a) else []
    counts = Counter(c.identity for changes in per_type.values() for c in changes)
    threshold = max(SHARED_MIN, SHARED_SHARE * len(per_type))
    shared_ids = {identity for identity, n in counts.items() if n >= threshold}
    shared: dict[str, SharedChange] = {}
    types = []
    for model_type, changes in per_type.items():
        for c in changes:
            if c.identity in shared_ids:
                group = shared.setdefault(c.identity, SharedChange(c, ()))
                shared[c.identity] = SharedChange(group.change, (*group.model_types, model_type))
        own = tuple(c for c in changes if c.identity not in shared_ids)
        if changes:
            types.append(TypeDrift(model_type, own, len(changes) - len(own)))
    ordered_shared = sorted(shared.values(), key=lambda g: (-len(g.model_types), g.change.kind, g.change.key))
    return Drift(len(per_type), tuple(unfingerprinted), tuple(types), tuple(ordered_shared))


def compare(base: Result, new: Result) -> list[Change]:
    """Every difference between two build rows' fingerprints and model facts."""
    fb, fa = Fingerprint.from_extras(base.extras), Fingerprint.from_extras(new.extras)
    changes = _config_changes(_flat(fb.config), _flat(fa.config))
    for (kind, old), (_, new_) in zip(fb.plans, fa.plans, strict=True):
        for key in sorted(set(old) | set(new_)):
            if old.get(key, _MISSING) != new_.get(key, _MISSING):
                changes.append(Change(kind, key, old.get(key), new_.get(key)))
    if (fb.sub_configs or []) != (fa.sub_configs or []):
        changes.append(Change("sub-configs", "", fb.sub_configs, fa.sub_configs))
    return changes + _fact_changes(base, new)


def _config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    removed = {k: old[k] for k in old.keys() - new.keys()}
    added = {k: new[k] for k in new.keys() - old.keys()}
    changes = []
    for old_key in sorted(removed):
        value = removed[old_key]
        match = next((k for k in sorted(added) if value is not None and added[k] == value
                      and type(added[k]) is type(value)), None)
        if match is not None:
            changes.append(Change("renamed", old_key, value, added.pop(match), new_key=match))
        else:
            changes.append(Change("removed", old_key, old=value))
    changes += [Change("added", k, new=added[k]) for k in sorted(added)]
    changes += [Change("changed", k, old[k], new[k]) for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
    return sorted(changes, key=lambda c: (_KIND_ORDER[c.kind], c.key))


_KIND_ORDER = {"removed": 0, "renamed": 1, "added": 2, "changed": 3}


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested sub-config dicts as dotted keys; other values (lists, id2label maps) whole."""
    flat = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and _is_config(value):
            flat.update(_flat(value, name + "."))
        else:
            flat[name] = value
    return flat


def _is_config(value: dict) -> bool:
    """A sub-config or a parameters dict (rope_parameters) is compared field by field; a map
    keyed by data (id2label: {"0": ...}) is one value."""
    return bool(value) and all(str(k).isidentifier() for k in value)


def _fact_changes(base: Result, new: Result) -> list[Change]:
    """The model class and parameter count on meta, where both rows say them and they differ."""
    fb, fa = ModelFacts.from_extras(base.extras), ModelFacts.from_extras(new.extras)
    return [Change(kind, "", old, new_) for kind, old, new_ in (("model-class", fb.model_class, fa.model_class),
                                                                ("parameters", fb.parameters, fa.parameters))
            if old is not None and new_ is not None and old != new_]


def _build_rows(run: Run) -> dict[str, Result]:
    """Model type -> the result that decides its `build` cell (the plain build row)."""
    return {model_type: r for (model_type, column), r in run_cells(run).items() if column == "build"}


def _list_change(old: list, new: list) -> str:
    """A long list's change in a line: its lengths and its first difference."""
    lengths = f"{len(old)} items" + (f" → {len(new)} items" if len(new) != len(old) else "")
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    before = _show(old[at], 40) if at < len(old) else "(end)"
    after = _show(new[at], 40) if at < len(new) else "(end)"
    return f"{lengths}, from [{at}]: {before} → {after}"


def _show(value: Any, width: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[:width - 1] + "…"
