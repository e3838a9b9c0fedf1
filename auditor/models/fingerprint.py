"""A model type's config fingerprint: what a serving engine reads of its default config.

Engines read config attributes directly (`config.rope_parameters`, `config.num_key_value_heads`),
so a transformers release that renames or re-defaults a field breaks them without any build
failing. The fingerprint is what a diff between two releases compares (auditor.report.drift):

- `config`: the default config's `to_dict()`, made canonical: keys sorted, JSON values, and
  the fields that only record who wrote it (`transformers_version`, `_name_or_path`, and every
  private `_...` field) left out, at every depth (sub-configs are dicts inside it);
- `attribute_map`, `base_model_tp_plan`, `base_model_pp_plan`: the class attributes engines use
  (vLLM's Transformers backend reads the plans for tensor and pipeline parallelism);
- `sub_configs`: the names of the sub-config fields (`text_config`, `vision_config`, ...);
- `digest`: a sha256 of all of the above, so that equal fingerprints compare in one step.

The model class and its parameter count on meta are in the build row already (model_facts).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

WRITER_FIELDS = frozenset({"transformers_version", "_name_or_path", "_commit_hash"})


def config_fingerprint(config) -> dict[str, Any]:
    cls = type(config)
    fingerprint = {
        "config": canonical(config.to_dict()),
        "attribute_map": canonical(dict(getattr(cls, "attribute_map", None) or {})),
        "base_model_tp_plan": canonical(getattr(cls, "base_model_tp_plan", None) or {}),
        "base_model_pp_plan": canonical(getattr(cls, "base_model_pp_plan", None) or {}),
        "sub_configs": sorted(getattr(cls, "sub_configs", None) or {}),
    }
    fingerprint["digest"] = digest(fingerprint)
    return fingerprint


def canonical(value: Any) -> Any:
    """`value` as plain, order-free JSON data: dict keys sorted and stringified, tuples as lists,
    anything else JSON cannot hold as its `str` (a dtype, an enum), writer-only fields dropped."""
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if not _writer_field(str(k))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    to_dict = getattr(value, "to_dict", None)  # a sub-config left as an object
    if callable(to_dict):
        return canonical(to_dict())
    return str(value)


def digest(fingerprint: dict[str, Any]) -> str:
    data = {k: v for k, v in fingerprint.items() if k != "digest"}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def _writer_field(key: str) -> bool:
    return key in WRITER_FIELDS or key.startswith("_")
