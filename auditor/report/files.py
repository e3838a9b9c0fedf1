"""Writing the report and diff files: the one module of `auditor.report` that touches the disk.

Everything here renders with the pure functions of the package and writes the text it gets;
`auditor sweep` calls `write_report` at its end, `auditor report` and `auditor diff` call these too.
`earlier_run` reads the reports folder for the run a report says what changed since.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.results import RESULTS_FILE, Run, read_info, read_run
from auditor.report.baseline import Baseline
from auditor.report.diff import RunDiff
from auditor.report.diff_render import render_diff_html, render_diff_markdown
from auditor.report.junit import render_diff_junit, render_junit
from auditor.report.markdown import render_summary
from auditor.report.page import render_report
from auditor.report.since import differences, same_selection
from auditor.report.tables import csv_text, long_frame, matrix_frame, serve_frame

REPORT_FILES = ("report.html", "results.csv", "matrix.csv", "summary.md", "serve.csv")
DIFF_FILES = ("diff.md", "diff.html")


def report_texts(runs: Sequence[Run], expected: Baseline | None = None, previous: Run | None = None,
                 no_previous: str = "") -> dict[str, str]:
    """File name -> content of the report files. `expected` relabels the failures it lists in
    report.html and summary.md only: the CSV tables are the rows as they are; `previous`: an
    earlier run, what changed since it in report.html and summary.md; `no_previous`: why there is
    none (Earlier.why), said in report.html."""
    page = render_report(runs, expected=expected, previous=previous, no_previous=no_previous)
    return dict(zip(REPORT_FILES, (page, csv_text(long_frame(runs)),
                                   csv_text(matrix_frame(runs)), render_summary(runs, expected=expected, previous=previous),
                                   csv_text(serve_frame(runs))), strict=True))


def diff_texts(diff: RunDiff) -> dict[str, str]:
    return dict(zip(DIFF_FILES, (render_diff_markdown(diff), render_diff_html(diff)), strict=True))


def write_report(runs: Sequence[Run], outdir: Path, expected: Baseline | None = None,
                 previous: Run | None = None, no_previous: str = "") -> list[Path]:
    """Write report.html, results.csv, matrix.csv, summary.md and serve.csv of `runs` into `outdir`;
    OSError propagates. `expected`, `previous`, `no_previous`: see report_texts."""
    return _write(report_texts(runs, expected, previous, no_previous), Path(outdir))


def write_text(path: Path, text: str) -> Path:
    """Write one rendered file (a JUnit XML, a Markdown summary) whole or not at all."""
    path = Path(path)
    return _write({path.name: text}, path.parent)[0]


def write_junit(runs: Sequence[Run], path: Path, expected: Baseline | None = None) -> Path:
    """The JUnit XML of `runs` (one testcase per cell) at `path`."""
    return write_text(path, render_junit(runs, expected))


def write_diff_junit(diff: RunDiff, path: Path) -> Path:
    """The JUnit XML of a diff (the regressions fail) at `path`."""
    return write_text(path, render_diff_junit(diff))


def write_summary(runs: Sequence[Run], path: Path, expected: Baseline | None = None,
                  previous: Run | None = None) -> Path:
    """The Markdown summary of `runs` at `path`; `previous`: see report_texts."""
    return write_text(path, render_summary(runs, expected=expected, previous=previous))


def write_diff(diff: RunDiff, outdir: Path) -> list[Path]:
    """Write diff.md and diff.html into `outdir`."""
    return _write(diff_texts(diff), Path(outdir))


@dataclass(frozen=True)
class Earlier:
    """The run a report says what changed since (None: there is none, and `why` says why in one
    line), and the run directories passed over because they could not be read: (name, why)."""

    run: Run | None
    unreadable: tuple[tuple[str, str], ...] = ()
    why: str = ""


_NOX_FOLDER = re.compile(r"py\d+\.\d+")  # the nox layout: reports/<run-id>/py3.X/


def earlier_run(run: Run) -> Earlier:
    """The previous run of the same selection (auditor.report.since.same_selection) in `run`'s
    reports folder: of the run directories that sort before `run`'s (run ids are UTC times), the
    newest whose header is of the same selection, whatever releases it ran under. In the nox layout
    (reports/<run-id>/py3.X/) the directories are the earlier run ids' py3.X folders. Another
    selection's run is passed over, and so is one that cannot be read (noted in `unreadable`).
    None for a loose results file (not in a run directory of its own)."""
    if run.path.name != RESULTS_FILE:
        return Earlier(None, why="its results file is not in a run directory of a reports folder")
    here = run.path.parent.resolve()
    try:
        candidates = _candidates(here)
    except OSError as exc:
        return Earlier(None, why=f"cannot list {here.parent}: {exc.strerror or exc}")
    unreadable, passed = [], []
    for directory in candidates:
        try:
            info = read_info(directory)  # the header alone: no rows read
            if not same_selection(run.info, info):
                passed.append((directory, info))
                continue
            return Earlier(read_run(directory), tuple(unreadable))
        except InputError as exc:
            unreadable.append((_name(directory, here), str(exc)))
    return Earlier(None, tuple(unreadable), _why_none(run, here, passed, unreadable))


def _candidates(here: Path) -> list[Path]:
    """The run directories before `here`, newest first."""
    def runs_in(folder: Path, before: str, inside: str = "") -> list[Path]:
        found = (d / inside if inside else d for d in folder.iterdir() if d.name < before and d.is_dir())
        return sorted((d for d in found if (d / RESULTS_FILE).is_file()), reverse=True)

    if _NOX_FOLDER.fullmatch(here.name):
        return runs_in(here.parent.parent, here.parent.name, here.name) + runs_in(here.parent, here.name)
    return runs_in(here.parent, here.name)


def _name(directory: Path, here: Path) -> str:
    return f"{directory.parent.name}/{directory.name}" if _NOX_FOLDER.fullmatch(here.name) else directory.name


def _why_none(run: Run, here: Path, passed: list, unreadable: list) -> str:
    folder = here.parent.parent if _NOX_FOLDER.fullmatch(here.name) else here.parent
    if not passed:
        return f"no earlier run{' that can be read' if unreadable else ''} in {folder}"
    directory, info = passed[0]
    return (f"none of the {len(passed)} earlier run{'s' if len(passed) != 1 else ''} in {folder} is of this "
            f"selection ({_name(directory, here)}: {'; '.join(differences(run.info, info))})")


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
