"""What report.html of a run weighs and how soon it is usable in headless Chromium.

    python benchmarks/report_page.py RUN [--repeat 5]

Renders RUN's report (`auditor report RUN -o <tmp>`, the same files a sweep writes), then opens
report.html in Debian's Chromium through playwright `--repeat` times and prints its bytes, its DOM
elements once the matrix is drawn, the run folder's bytes, and the median of first paint
(`performance.getEntriesByName("first-paint")`) and of the matrix's rows being drawn, in ms.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def page_loads(url: str, ready: str, repeat: int, measure: str) -> tuple[list[float], list[float], object]:
    """`url` loaded `repeat` times in Debian's Chromium through playwright, each in a new page until
    `ready` (a CSS selector) is in it: the first paints and the times `ready` was reached, in ms, and
    what the script `measure` gave on the last load."""
    from playwright.sync_api import sync_playwright

    paints, drawn, measured = [], [], None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"),
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for _ in range(repeat):
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector(ready)
            paints.append(page.evaluate(
                "performance.getEntriesByName('first-paint')[0]?.startTime ?? performance.now()"))
            drawn.append(page.evaluate("performance.now()"))
            measured = page.evaluate(measure)
            page.close()
        browser.close()
    return paints, drawn, measured


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="report-page-"))
    subprocess.run([sys.executable, "-m", "auditor", "report", str(args.run), "-o", str(out)], check=True,
                   capture_output=True)
    page_file = out / "report.html"
    paints, drawn, elements = page_loads(page_file.as_uri(), "#matrix tbody tr", args.repeat,
                                         "document.getElementsByTagName('*').length")
    folder = sum(f.stat().st_size for f in args.run.iterdir() if f.is_file())
    print(f"report.html: {page_file.stat().st_size:,} bytes, {elements:,} DOM elements with the matrix drawn")
    print(f"run folder ({args.run}): {folder:,} bytes")
    print(f"first paint: median {statistics.median(paints):.0f} ms; matrix drawn by "
          f"{statistics.median(drawn):.0f} ms ({args.repeat} loads)")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
