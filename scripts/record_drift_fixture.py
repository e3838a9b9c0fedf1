"""Record the build rows' fingerprints of two real runs as a small test fixture.

    python scripts/record_drift_fixture.py BASE_RUN NEW_RUN OUT.json [--types a,b,...] [--unchanged N]

Keeps the model types named with --types, else every type whose fingerprint or parameter
count differs plus N (default 10) that do not, so the drift tests run on real data offline.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _rows(run: Path) -> tuple[str, dict]:
    header, rows = None, {}
    for line in (run / "results.jsonl").read_text().splitlines():
        data = json.loads(line)
        if data.get("kind") == "header":
            header = data["run"]["transformers"]
        elif data.get("kind") == "result" and data["check"] == "build" and not data["component"]:
            extras = {k: data["extras"][k] for k in ("fingerprint", "model_class", "parameters") if k in data["extras"]}
            rows.setdefault(data["model_type"], {"status": data["status"], "extras": extras})
    return header, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--types", default="")
    parser.add_argument("--unchanged", type=int, default=10)
    args = parser.parse_args()
    (vb, base), (vn, new) = _rows(args.base), _rows(args.new)
    common = sorted(set(base) & set(new))

    def differs(m):
        fb, fn = base[m]["extras"].get("fingerprint"), new[m]["extras"].get("fingerprint")
        return bool(fb and fn) and (fb["digest"] != fn["digest"]
                                    or base[m]["extras"].get("parameters") != new[m]["extras"].get("parameters"))

    if args.types:
        keep = [m for m in args.types.split(",") if m in base and m in new]
    else:
        same = [m for m in common if not differs(m) and base[m]["extras"].get("fingerprint")]
        keep = [m for m in common if differs(m)] + same[:args.unchanged]
    data = {"versions": {"base": vb, "new": vn},
            "base": {m: base[m] for m in keep}, "new": {m: new[m] for m in keep}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{args.out}: {len(keep)} model types, {args.out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
