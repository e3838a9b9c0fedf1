"""Independent check of the drift section: each default config's to_dict(), straight from
transformers, without the auditor's code.

    python scripts/config_dicts.py dump OUT.json      # in each release's venv
    python scripts/config_dicts.py compare A.json B.json

`compare` prints the model types present in both whose to_dict() differs (JSON with sorted
keys, so order does not count; `transformers_version`, `_name_or_path` and private `_` fields
dropped at every depth, as they only record the writer). BENCHMARKS.md and the drift test
compare this list with what `auditor diff` lists.
"""

from __future__ import annotations

import json
import sys


def _clean(value):
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()
                if not str(k).startswith("_") and k != "transformers_version"}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def dump(path: str) -> None:
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    out = {}
    for model_type in sorted(MODEL_MAPPING_NAMES):
        try:
            config = CONFIG_MAPPING[model_type]()
        except Exception as exc:  # a config that cannot be made by default has no dict to compare
            out[model_type] = {"__error__": type(exc).__name__}
            continue
        out[model_type] = json.loads(json.dumps(_clean(config.to_dict()), sort_keys=True, default=str))
    with open(path, "w") as handle:
        json.dump(out, handle, sort_keys=True)


def compare(a: str, b: str) -> None:
    with open(a) as fa, open(b) as fb:
        old, new = json.load(fa), json.load(fb)
    common = [m for m in sorted(set(old) & set(new)) if "__error__" not in old[m] and "__error__" not in new[m]]
    changed = [m for m in common if old[m] != new[m]]
    print(f"{len(common)} compared, {len(changed)} differ: {' '.join(changed)}")


if __name__ == "__main__":
    {"dump": lambda: dump(sys.argv[2]), "compare": lambda: compare(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
