"""A real atlas's figures: its database and site sizes, the index page's weight, its first paint
and grid in headless Chromium, and the grid's verdict counts answered from the database file alone.

    python benchmarks/atlas_site.py DIR [--repeat 5]

DIR is an atlas `auditor atlas DIR ...` made. The index's weight is index.html with everything it
loads (atlas.js, atlas.css, search.js); first paint is `performance.getEntriesByName("first-paint")`
and "grid drawn" the time its first row of cells is in the page, medians of `--repeat` loads from the
file system in Debian's Chromium (report_page.page_loads). The counts: `SELECT ... FROM verdicts` with
DuckDB on DIR/atlas.duckdb, read-only.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from report_page import page_loads

ASSETS = ("index.html", "atlas.js", "atlas.css", "search.js")


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("atlas", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    site = args.atlas / "site"
    weight = sum((site / name).stat().st_size for name in ASSETS if (site / name).exists())
    pages = sorted(site.rglob("*.html"))
    type_pages = sorted((p.stat().st_size for p in (site / "types").glob("*.html")), reverse=True)
    print(f"database: {_size(args.atlas / 'atlas.duckdb'):,} bytes; site: {_size(site):,} bytes in {len(pages)} pages; "
          f"runs: {_size(args.atlas / 'runs'):,} bytes")
    print(f"index.html {(site / 'index.html').stat().st_size:,} bytes; with what it loads ({', '.join(ASSETS[1:])}): "
          f"{weight:,} bytes")
    if type_pages:
        print(f"type pages: {len(type_pages)}, largest {type_pages[0]:,} bytes, median {statistics.median(type_pages):,.0f}")

    paints, drawn, rows = page_loads((site / "index.html").resolve().as_uri(), "#grid table.grid tbody tr",
                                     args.repeat, "document.querySelectorAll('#grid table.grid tbody tr').length")
    print(f"first paint: median {statistics.median(paints):.0f} ms; grid drawn ({rows:,} rows) by "
          f"{statistics.median(drawn):.0f} ms ({args.repeat} loads)")

    import duckdb

    connection = duckdb.connect(str(args.atlas / "atlas.duckdb"), read_only=True)
    query = ("SELECT engine, emulated, transformers, verdict, count(*) FROM verdicts "
             "GROUP BY ALL ORDER BY engine, emulated, transformers, verdict")
    print(query)
    for row in connection.execute(query).fetchall():
        print("  " + " | ".join(str(v) for v in row))
    broken = connection.execute("SELECT count(*) FROM first_broken").fetchone()[0]
    print(f"first_broken: {broken} (type, engine) pairs")


if __name__ == "__main__":
    main()
