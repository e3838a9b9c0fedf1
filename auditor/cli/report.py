"""`auditor report`: render report.html, results.csv and matrix.csv from finished runs, re-running nothing.

With --history REPORTS_DIR it instead indexes a folder of nightly run directories: each run gets
its report when it has none, each run its diff against the run before, and the folder an index.html
(with a timeline of every cell that changed) and timeline.csv (each such cell's status per night,
with the night's versions, its first failing night, flips, and whether it is flaky).
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from auditor.cli import EXIT_FINDINGS, EXIT_OK, UsageError, read_results
from auditor.core.results import RESULTS_FILE
from auditor.sweeping.options import add_shared_argument

INDEX_FILE = "index.html"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="render the HTML report and CSV tables of finished runs",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="*", type=Path, metavar="RESULTS",
                   help="results.jsonl files or run directories; several merge into one matrix")
    p.add_argument("--output", "-o", type=Path, metavar="OUTDIR",
                   help="where to write the files (default: the run's directory when there is one input)")
    p.add_argument("--history", type=Path, metavar="REPORTS_DIR",
                   help="write REPORTS_DIR/index.html over its run directories, with diffs between nights")
    add_shared_argument(p, "junit")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the Markdown summary to FILE ('-': standard output), e.g. "
                        "$GITHUB_STEP_SUMMARY; under 65,536 characters")
    add_shared_argument(p, "fail_on")
    add_shared_argument(p, "expected")
    p.add_argument("--against", type=Path, metavar="RUN",
                   help="an earlier run: report.html and summary.md say what changed since it (new findings, "
                        "fixed, flaky); default: the newest run of the same environment (Python, torch, transformers, "
                        "installed engines, label, shard) before this one in the same reports folder")
    p.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    from auditor import api
    from auditor.report.gate import describe_hits, parse_fail_on

    if args.history is not None:
        if args.results or args.output or args.junit or args.markdown or args.fail_on or args.expected:
            raise UsageError("--history takes no RESULTS, --output, --junit, --markdown, --fail-on or --expected")
        return _history(args.history)
    if not args.results:
        raise UsageError("give at least one results.jsonl or run directory (or --history REPORTS_DIR)")
    rules = parse_fail_on(args.fail_on)
    expected = api.read_baseline(args.expected)
    runs = [read_results(path) for path in args.results]
    if args.output is None and len(runs) > 1:
        raise UsageError("with several inputs, say where the report goes with --output")
    outdir = args.output if args.output is not None else runs[0].path.parent
    previous = _previous(args.against, runs)

    from auditor.report.files import write_text

    for path in _write(lambda: api.write_report(runs, outdir, expected, previous), outdir):
        print(path)
    if args.junit is not None:
        print(_write(lambda: write_text(args.junit, api.render_junit(runs, expected)), args.junit))
    if args.markdown == "-":
        sys.stdout.write(api.render_summary(runs, expected, previous))
    elif args.markdown is not None:
        target = Path(args.markdown)
        print(_write(lambda: write_text(target, api.render_summary(runs, expected, previous)), target))
    hits = api.gate(runs, args.fail_on, expected) if rules else ()
    if hits:
        print(f"auditor: {describe_hits(hits)}", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_OK


def _previous(against: Path | None, runs):
    """The run to say what changed since: `--against`, else the newest run of the same
    environment before a single input's in its reports folder (auditor.report.files.earlier_run;
    None when there is none, or for merged inputs)."""
    from auditor.report.files import earlier_run

    if against is not None:
        return read_results(against)
    if len(runs) != 1:
        return None
    found = earlier_run(runs[0])
    for name, why in found.unreadable:  # an unreadable neighbour is not this report's failure
        print(f"auditor: warning: not comparing with {name}: {why}", file=sys.stderr)
    return found.run


def _write(action, target: Path):
    """What `action` wrote; an OSError as a UsageError naming `target`."""
    try:
        return action()
    except OSError as exc:
        raise UsageError(f"cannot write to {target}: {exc.strerror or exc}") from None


def _history(reports: Path) -> int:
    from auditor.report import write_diff, write_report
    from auditor.report.history import REPORT_FILE, build_history, render_history
    from auditor.report.timeline import TIMELINE_FILE, render_timeline_csv

    if not reports.is_dir():
        raise UsageError(f"{reports} is not a directory")
    runs, skipped = [], []
    for directory in sorted(d for d in reports.iterdir() if (d / RESULTS_FILE).is_file()):
        try:
            runs.append(read_results(directory))
        except UsageError as exc:
            skipped.append((directory.name, str(exc)))
            print(f"auditor: warning: skipping {directory.name}: {exc}", file=sys.stderr)
    history = build_history(runs)
    for run in history.runs:
        if not (run.path.parent / REPORT_FILE).exists():
            _write(partial(write_report, [run], run.path.parent), run.path.parent)
    for run, diff in history.consecutive():
        _write(partial(write_diff, diff, run.path.parent), run.path.parent)
    index, timeline = reports / INDEX_FILE, reports / TIMELINE_FILE
    for path, text in ((index, render_history(history, skipped)),
                       (timeline, render_timeline_csv(history.runs, history.cells))):
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        print(path)
    return EXIT_OK
