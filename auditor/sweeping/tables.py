"""The tables step: results.csv, matrix.csv, report.html, summary.md and serve.csv from results.jsonl, and
the JUnit XML and Markdown files a request asks for."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

from auditor.core.results import Run, read_run


class Tables:
    """results.csv, matrix.csv, report.html, summary.md and serve.csv, from everything in results.jsonl.

    Once the last model type's rows are written they are made on a thread of their own, while
    the workers and the Ray cluster stop (a second or more each); `finish()` waits for them. An
    interrupted sweep, or one with rows after the last model type's, gets them made in
    `finish()` instead, from every row there is.
    """

    def __init__(self, outdir: Path, expected=None) -> None:
        self.outdir = outdir
        self.expected = expected  # an expected baseline: report.html and summary.md relabel its failures
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._future: concurrent.futures.Future | None = None
        self._stale = False

    def rows_written(self, *, last: bool) -> None:
        if self._future is not None:
            self._stale = True  # more rows after the start: made again in finish()
        elif last:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="auditor-tables")
            self._future = self._thread.submit(write_tables, self.outdir, self.expected)

    def finish(self) -> tuple[Run, tuple[Path, ...]]:
        """Wait for (or make) the tables; the run they were made of and the files written."""
        if self._future is not None:
            self._thread.shutdown()  # waits for it
            if not self._stale:
                return self._future.result()  # raises what writing them raised
        return write_tables(self.outdir, self.expected)


def write_tables(outdir: Path, expected=None) -> tuple[Run, tuple[Path, ...]]:
    """results.csv, matrix.csv, report.html, summary.md and serve.csv from everything in results.jsonl."""
    from auditor.report import write_report

    run = read_run(outdir)
    return run, tuple(write_report([run], outdir, expected))


def extra_files(run: Run, junit: Path | None, markdown: Path | None, expected=None) -> list[Path]:
    """The JUnit XML and the Markdown summary, where the request asked for them."""
    from auditor.report import write_junit, write_summary

    paths = []
    if junit is not None:
        paths.append(write_junit([run], junit, expected))
    if markdown is not None:
        paths.append(write_summary([run], markdown, expected))
    return paths
