"""Reading runs, comparing them and rendering their reports: the API of `auditor report`,
`auditor diff` and `auditor agree`. Paths may be results.jsonl files or run directories."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.results import Run
from auditor.core.results import read_run as _read_run

PathLike = str | os.PathLike


def read_run(path: PathLike | Run) -> Run:
    """The run in a results file or run directory. A file whose tail a killed sweep cut short (or
    garbage overwrote) is read without it (`Run.damage` says what was left out); one that cannot
    be read at all is a ResultsFileError (an InputError)."""
    return path if isinstance(path, Run) else _read_run(Path(path))


def read_runs(paths: Iterable[PathLike | Run]) -> list[Run]:
    return [read_run(p) for p in paths]


def diff(base: PathLike | Run, new: PathLike | Run, allow: PathLike | Iterable[str] | None = None,
         expected=None):
    """Compare two runs cell by cell: a `RunDiff` (its `blocking` regressions are what makes
    `auditor diff` exit 1). `allow` is an allow-list file, or its entries; `expected` an expected
    baseline (or its file), whose listed failures block nothing."""
    from auditor.report.diff import AllowList, AllowListError, diff_runs, parse_allow_list

    allowed = AllowList()
    if isinstance(allow, (str, os.PathLike)):
        try:
            allowed = parse_allow_list(Path(allow).read_text(encoding="utf-8"), str(allow))
        except OSError as exc:
            raise InputError(f"cannot read allow list {allow}: {exc.strerror or exc}") from None
        except AllowListError as exc:
            raise InputError(str(exc)) from None
    elif allow is not None:
        try:
            allowed = parse_allow_list("\n".join(allow), "allow entries")
        except AllowListError as exc:
            raise InputError(str(exc)) from None
    return diff_runs(read_run(base), read_run(new), allowed, read_baseline(expected))


def matrix(runs: Sequence[PathLike | Run]):
    """The matrix of one or more runs (model types down, a column group per environment)."""
    from auditor.report.matrix import build_matrix

    return build_matrix(read_runs(runs))


def findings(runs: Sequence[PathLike | Run]):
    """One `Finding` per matrix column: what report.html and a finished sweep say first."""
    from auditor.report.summary import findings as column_findings

    return column_findings(matrix(runs))


def verdicts(runs: Sequence[PathLike | Run]):
    """One `ServeVerdict` per environment, serving engine and model type (auditor.report.serve):
    `servable` or where the engine stops, and whether it would compile; serve.csv's rows."""
    from auditor.report.serve import verdicts as serve_verdicts

    return serve_verdicts(read_runs(runs))


def write_report(runs: Sequence[PathLike | Run], outdir: PathLike, expected=None, previous=None) -> list[Path]:
    """report.html, results.csv, matrix.csv and summary.md of the runs, merged, in `outdir`.
    `expected`: an expected baseline (or its file); report.html and summary.md show the failures
    it lists as expected; the CSV tables keep the rows as they are. `previous`: an earlier run (or
    its directory), what changed since it in report.html and summary.md."""
    from functools import partial

    from auditor.report import write_report as write

    before = read_run(previous) if previous is not None and not isinstance(previous, Run) else previous
    return _writing(partial(write, expected=read_baseline(expected), previous=before), read_runs(runs), outdir)


def write_diff(difference, outdir: PathLike) -> list[Path]:
    """diff.md and diff.html of a `RunDiff` in `outdir`."""
    from auditor.report import write_diff as write

    return _writing(write, difference, outdir)


def render_summary(runs: Sequence[PathLike | Run], expected=None, previous=None) -> str:
    """The Markdown summary (for a pull request or $GITHUB_STEP_SUMMARY), under 65,536 characters.
    `expected`: an expected baseline (or its file), whose listed failures it counts as expected;
    `previous`: an earlier run (or its directory), what changed since it."""
    from auditor.report.markdown import render_summary as render

    before = read_run(previous) if previous is not None and not isinstance(previous, Run) else previous
    return render(read_runs(runs), expected=read_baseline(expected), previous=before)


def render_junit(runs_or_diff, expected=None) -> str:
    """JUnit XML: of runs (one testcase per cell; the failures the expected baseline `expected`, or
    its file, lists are skipped as expected), or of a `RunDiff` (the regressions fail)."""
    from auditor.report.diff import RunDiff
    from auditor.report.junit import render_diff_junit
    from auditor.report.junit import render_junit as render

    if isinstance(runs_or_diff, RunDiff):
        return render_diff_junit(runs_or_diff)
    return render(read_runs(runs_or_diff), read_baseline(expected))


def gate(runs: Sequence[PathLike | Run], fail_on: Iterable[str], expected=None):
    """The cells that `--fail-on` rules match (`refused`, `decorate/*/legacy=refused`): a tuple
    of `GateHit`, empty when the gate passes. Bad rules are an InputError. `expected`: a
    Baseline (or its file), whose listed failures never match."""
    from auditor.report.baseline import expected_matrix
    from auditor.report.gate import gate_hits, parse_fail_on

    rules = parse_fail_on(fail_on)
    return gate_hits(expected_matrix(read_runs(runs), read_baseline(expected)), rules)


def read_baseline(path):
    """The expected baseline in a CSV file (`auditor baseline` writes one); a Baseline or None
    is given back as it is. An unreadable or malformed file is an InputError."""
    from auditor.report.baseline import read_baseline as read

    return read(path)


def baseline(runs: Sequence[PathLike | Run]):
    """The confirmed failures of the runs as an expected Baseline (render_baseline writes it)."""
    from auditor.report.baseline import baseline_of

    return baseline_of(read_runs(runs))


def nightly_gate(new: PathLike | Run, previous: PathLike | Run | None = None, expected=None):
    """The nightly gate's verdict on `new` (auditor.report.nightly): `.failed` on confirmed,
    unexpected failures only."""
    from auditor.report.nightly import nightly_gate as judge

    return judge(read_run(new), None if previous is None else read_run(previous), read_baseline(expected))


def _writing(write, subject, outdir: PathLike) -> list[Path]:
    try:
        return write(subject, Path(outdir))
    except OSError as exc:
        raise InputError(f"cannot write to {outdir}: {exc.strerror or exc}") from None
