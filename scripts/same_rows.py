"""Do two sweeps give the same rows? Every field of every row, timings and `worker` aside
(`seconds`, and the compile check's `*_seconds` extras).

    python scripts/same_rows.py reports/before reports/after

For changes that must not change behaviour (a refactoring, a speed-up): exits 0 and prints the
number of rows compared when the two results files hold the same rows (in any order), else 1
with the first differences.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

from auditor.core.results import read_run

IGNORED = ("seconds", "worker")


def rows(path: str) -> Counter:
    found = Counter()
    for result in read_run(path).results:
        data = result.to_json()
        for name in IGNORED:
            data.pop(name, None)
        data["extras"] = {k: v for k, v in data["extras"].items() if not k.endswith("_seconds")}
        found[json.dumps(data, sort_keys=True, default=str)] += 1
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before, after = rows(argv[0]), rows(argv[1])
    only_before, only_after = before - after, after - before
    if not only_before and not only_after:
        print(f"same rows: {sum(before.values())} compared ({', '.join(IGNORED)} and *_seconds extras aside)")
        return 0
    print(f"{sum(only_before.values())} rows only in {argv[0]}, {sum(only_after.values())} only in {argv[1]}")
    for label, rows_ in (("-", only_before), ("+", only_after)):
        for row in list(rows_)[:10]:
            print(label, row[:400])
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
