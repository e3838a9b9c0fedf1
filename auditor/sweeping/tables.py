"""The tables step: results.csv, matrix.csv, report.html, summary.md and serve.csv from results.jsonl, and
the JUnit XML and Markdown files a request asks for; report.html and summary.md say what changed
since the earlier run (`--against`, else the newest run of the same environment before this one in
the reports folder: auditor.report.files.earlier_run)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.core.results import Run, read_run

if TYPE_CHECKING:  # the report layer is imported when the tables are made, not with the parser
    from auditor.report.files import Earlier


class Tables:
    """results.csv, matrix.csv, report.html, summary.md and serve.csv, from everything in results.jsonl.

    Once the last model type's rows are written they are made on a thread of their own, while
    the workers and the Ray cluster stop (a second or more each); `finish()` waits for them. An
    interrupted sweep, or one with rows after the last model type's, gets them made in
    `finish()` instead, from every row there is.
    """

    def __init__(self, outdir: Path, expected=None, against: Run | None = None) -> None:
        self.outdir = outdir
        self.expected = expected  # an expected baseline: report.html and summary.md relabel its failures
        # The run they say what changed since: `against`, else looked up when they are first made.
        self.earlier: Earlier | None = None
        if against is not None:
            from auditor.report.files import Earlier

            self.earlier = Earlier(against)
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._future: concurrent.futures.Future | None = None
        self._stale = False

    def rows_written(self, *, last: bool) -> None:
        if self._future is not None:
            self._stale = True  # more rows after the start: made again in finish()
        elif last:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="auditor-tables")
            self._future = self._thread.submit(self._write)

    def finish(self) -> tuple[Run, tuple[Path, ...]]:
        """Wait for (or make) the tables; the run they were made of and the files written."""
        if self._future is not None:
            self._thread.shutdown()  # waits for it
            if not self._stale:
                return self._future.result()  # raises what writing them raised
        return self._write()

    @property
    def previous(self) -> Run | None:
        """The earlier run the tables were compared with (None: none, or not made yet)."""
        return self.earlier.run if self.earlier is not None else None

    def _write(self) -> tuple[Run, tuple[Path, ...]]:
        # One at a time: the thread's, then (after it is waited for) finish()'s.
        run = read_run(self.outdir)
        if self.earlier is None:
            from auditor.report.files import earlier_run

            self.earlier = earlier_run(run)
        return run, write_tables(run, self.outdir, self.expected, self.previous, self.earlier.why)


def write_tables(run: Run, outdir: Path, expected=None, previous: Run | None = None,
                 no_previous: str = "") -> tuple[Path, ...]:
    """results.csv, matrix.csv, report.html, summary.md and serve.csv of `run`; `previous`: the
    earlier run report.html and summary.md say what changed since; `no_previous`: why there is
    none, which report.html says as the end of the sweep does."""
    from auditor.report import write_report

    return tuple(write_report([run], outdir, expected, previous, no_previous))


def extra_files(runs: Sequence[Run], junit: Path | None, markdown: Path | None, expected=None,
                previous: Run | None = None) -> list[Path]:
    """The JUnit XML and the Markdown summary of `runs` (this sweep's, and with --engine each
    engine venv's too), where the request asked for them."""
    from auditor.report import write_junit, write_summary

    paths = []
    if junit is not None:
        paths.append(write_junit(list(runs), junit, expected))
    if markdown is not None:
        paths.append(write_summary(list(runs), markdown, expected, previous))
    return paths
