"""The tokenizer check across releases, over every type (issue 61).

    python benchmarks/tokenizer_upgrade.py OUT FROM TO [FROM TO ...]

Runs `auditor upgrade-check --from FROM --to TO --checks tokenizer -j 1` for each pair (the side
venvs made or reused by the command itself), then prints, per pair: the whole command's seconds;
per side, its model types, the seconds its sweep took (from its results file: first row to last)
and the seconds per type its rows took; the verdicts on the new side; and the tokenizer classes
that differ or fail to load there, each with one example.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rows(side: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in (side / "results.jsonl").read_text().splitlines()]
    return lines[0], [line for line in lines if line.get("kind") == "result"]


def _side(side: Path) -> dict:
    header, rows = _rows(side)
    started = datetime.fromisoformat(header["run"]["started"])
    stamps = (side / "results.jsonl").stat().st_mtime
    types = {row["model_type"] for row in rows}
    seconds = sum(row["seconds"] for row in rows)
    return {"transformers": header["run"]["transformers"], "types": len(types),
            "sweep_seconds": round(stamps - started.timestamp(), 1),
            "row_seconds_per_type": round(seconds / max(len(types), 1), 4), "rows": rows}


def main(out: Path, pairs: list[tuple[str, str]]) -> None:
    for base, new in pairs:
        outdir = out / f"{base}-to-{new}"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "auditor", "upgrade-check", "--from", base, "--to", new,
                               "--checks", "tokenizer", "-j", "1", "-o", str(outdir), "--overwrite"],
                              capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            print(proc.stderr[-3000:])
            raise SystemExit(f"upgrade-check {base} -> {new} exited {proc.returncode}")
        sides = {name: _side(outdir / name) for name in ("base", "new")}
        new_rows = sides["new"]["rows"]
        verdicts = collections.Counter(row["status"] for row in new_rows)
        classes: dict[str, tuple[str, str]] = {}
        for row in new_rows:
            if row["component"] in ("", "slow") and row["status"] not in ("same", "skipped", "missing-dependency"):
                cls = row["extras"].get("class", "?")
                classes.setdefault(cls, (row["status"], row["message"][:220]))
        print(f"## {base} -> {new}: {wall:.0f} s for the whole upgrade-check")
        for name, side in sides.items():
            print(f"  {name} ({side['transformers']}): {side['types']} types, sweep {side['sweep_seconds']} s, "
                  f"{side['row_seconds_per_type']} s of rows per type")
        print(f"  new side's verdicts: {dict(verdicts.most_common())}")
        print(f"  tokenizer classes that differ or fail to load there: {len(classes)}")
        for cls, (status, message) in sorted(classes.items()):
            print(f"    {cls}: {status}: {message}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 3 or len(args) % 2 != 1:
        raise SystemExit(__doc__)
    main(Path(args[0]), list(zip(args[1::2], args[2::2], strict=True)))
