"""`auditor baseline RUN... -o FILE`: write the confirmed failures of runs as an expected baseline.

The file is a CSV (model_type, column, status, signature, reason), one line per failing cell:
findings only (a flaky cell, a skip or a failure by design is not listed). `auditor sweep`,
`report`, `diff` and `gate` take it with --expected FILE: a failure it lists, with the same status
and signature, is `expected` and no gate fails on it. Write it again when cells are fixed (the
gate says so).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.cli import EXIT_OK, UsageError, read_results


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("baseline", help="write the failing cells of runs as an expected baseline (CSV)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", type=Path, metavar="RUN", help="results.jsonl files or run directories")
    p.add_argument("--output", "-o", type=Path, metavar="FILE", required=True,
                   help="the baseline to write, e.g. expected.csv ('-': standard output)")
    p.set_defaults(handler=run_baseline)


def run_baseline(args: argparse.Namespace) -> int:
    from auditor import api
    from auditor.report.baseline import render_baseline
    from auditor.report.files import write_text

    runs = [read_results(path) for path in args.results]
    baseline = api.baseline(runs)
    text = render_baseline(baseline)
    if str(args.output) == "-":
        sys.stdout.write(text)
        return EXIT_OK
    try:
        print(write_text(args.output, text))
    except OSError as exc:
        raise UsageError(f"cannot write to {args.output}: {exc.strerror or exc}") from None
    print(f"{len(baseline.entries)} failing cell{'s' if len(baseline.entries) != 1 else ''} listed", file=sys.stderr)
    return EXIT_OK
