"""The atlas index's weight, and the site's render time, for a grid of TYPES x RELEASES.

Synthesizes the derived tables of an atlas database (environments, two engines' verdicts, the
changes between consecutive releases and their counts) as auditor/atlas/derive.py writes them,
then renders the site from that database with auditor/atlas/site.py and measures:
index.html, and everything it loads (atlas.js, atlas.css, search.js), in bytes; the render time;
the database's size. No sweep: the question is whether the page weight depends on the grid's
size, which the rows behind it do not change.

    python benchmarks/atlas_weight.py                  # 700 types x 20 releases
    python benchmarks/atlas_weight.py --types 700 --releases 20 --keep /tmp/atlas-weight
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditor.atlas import grid, site, store  # noqa: E402

GATES = ("backend/registry", "backend/tp-plan", "backend/attention", "backend/sglang/attention-backend")
ENGINES = (("vllm", "vLLM", "0.34.0"), ("sglang", "SGLang", "0.5.23"))


def synthesize(connection, types: int, releases: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    names = [f"type_{i:04d}" for i in range(types)]
    versions = [f"5.{i}.0" for i in range(releases)]
    lineage = "torch 2.13.0; python 3.11; engines emulated; checks backend,build"
    connection.executemany("INSERT INTO environments VALUES (?, ?, '2.13.0', '3.11', '', ?)",
                           [[f"{v} torch 2.13.0 py3.11", v, i] for i, v in enumerate(versions)])
    verdicts, changes, counts = [], [], []
    for engine, title, release in ENGINES:
        state = {n: rng.random() < 0.8 for n in names}
        for i, version in enumerate(versions):
            env = f"{version} torch 2.13.0 py3.11"
            present = names[: types - (releases - 1 - i) * (types // (releases * 4))]  # types arrive over time
            lost = gained = 0
            for n in present:
                before = state[n]
                if rng.random() < 0.02:
                    state[n] = not state[n]
                gate = "" if state[n] else rng.choice(GATES)
                cause = "" if state[n] else f"ValueError: {gate} refuses <Name>"
                verdicts.append([env, lineage, n, engine, title, release, True, "servable" if state[n] else "stops",
                                 "", gate, "" if state[n] else "unsupported", cause, "" if state[n] else "engine",
                                 "servable" if state[n] else f"stops at {gate}: {cause}",
                                 "" if state[n] else f"auditor sweep --models {n} --checks backend"])
                if i and before != state[n]:
                    kind = "gained" if state[n] else "lost"
                    lost, gained = lost + (kind == "lost"), gained + (kind == "gained")
                    changes.append([env, f"{versions[i - 1]} torch 2.13.0 py3.11", lineage, engine, release, True,
                                    kind, n, "", "", kind, gate, "engine", cause, "", ""])
            if i:
                counts.append([env, f"{versions[i - 1]} torch 2.13.0 py3.11", lineage, engine, title, release, True,
                               len(present), f"{title} {release}: {lost} lost, {gained} gained of {len(present)}",
                               lost, gained, 0, 0, "", "", ""])
    store.replace_derived(connection, {"engine_verdicts": verdicts, "changes": changes, "release_changes": counts})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", type=int, default=700)
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="write the atlas here (default: a temporary folder)")
    args = parser.parse_args()
    directory = args.keep or Path(tempfile.mkdtemp(prefix="atlas-weight-"))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / store.DB_FILE).unlink(missing_ok=True)
    connection = store.connect(directory / store.DB_FILE)
    start = time.monotonic()
    synthesize(connection, args.types, args.releases)
    made = time.monotonic() - start
    start = time.monotonic()
    pages = site.render_site(connection)
    rendered = time.monotonic() - start
    connection.close()
    written = grid.write_site(directory / grid.SITE_DIR, pages)
    weight = {name: len(pages[name].encode()) for name in ("index.html", "atlas.js", "atlas.css", "search.js")}
    types_pages = [len(text.encode()) for name, text in pages.items() if name.startswith("types/")]
    print(f"grid: {args.types} types x {args.releases} releases x {len(ENGINES)} engines "
          f"(database filled in {made:.1f} s, {(directory / store.DB_FILE).stat().st_size / 1e6:.1f} MB)")
    print(f"site: {written} files rendered in {rendered:.1f} s")
    print("index weight: " + ", ".join(f"{name} {size / 1024:.1f} KB" for name, size in weight.items())
          + f"; total {sum(weight.values()) / 1024:.1f} KB")
    print(f"type pages: largest {max(types_pages) / 1024:.1f} KB, median "
          f"{sorted(types_pages)[len(types_pages) // 2] / 1024:.1f} KB")
    print(f"in {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
