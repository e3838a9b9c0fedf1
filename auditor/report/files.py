"""Writing the report and diff files: the one module of `auditor.report` that touches the disk.

Everything here renders with the pure functions of the package and writes the text it gets;
`auditor sweep` calls `write_report` at its end, `auditor report` and `auditor diff` call these too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from auditor.core.results import Run
from auditor.report.diff import RunDiff
from auditor.report.diff_render import render_diff_html, render_diff_markdown
from auditor.report.page import render_report
from auditor.report.tables import csv_text, long_frame, matrix_frame

REPORT_FILES = ("report.html", "results.csv", "matrix.csv")
DIFF_FILES = ("diff.md", "diff.html")


def report_texts(runs: Sequence[Run]) -> dict[str, str]:
    """File name -> content of the three report files."""
    return dict(zip(REPORT_FILES, (render_report(runs), csv_text(long_frame(runs)), csv_text(matrix_frame(runs))),
                    strict=True))


def diff_texts(diff: RunDiff) -> dict[str, str]:
    return dict(zip(DIFF_FILES, (render_diff_markdown(diff), render_diff_html(diff)), strict=True))


def write_report(runs: Sequence[Run], outdir: Path) -> list[Path]:
    """Write report.html, results.csv and matrix.csv of `runs` into `outdir`; OSError propagates."""
    return _write(report_texts(runs), Path(outdir))


def write_diff(diff: RunDiff, outdir: Path) -> list[Path]:
    """Write diff.md and diff.html into `outdir`."""
    return _write(diff_texts(diff), Path(outdir))


def _write(texts: dict[str, str], outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in texts.items():
        path = outdir / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text, encoding="utf-8", newline="")
        tmp.replace(path)
        paths.append(path)
    return paths
