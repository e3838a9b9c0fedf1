"""The command line: the only place that prints, owns paths, and picks exit codes.

Each subcommand is a module with `add_parser(subparsers)` and `run(args) -> int`.
Exit codes: 0 success, 1 a finding the command exists to report (regressions), 2 bad input,
130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from auditor import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input found by a subcommand: printed as `auditor: error: ...`, exit 2."""


def _subcommands():
    from auditor.cli import agree, diff, report, sweep, upgrade

    return [sweep, report, diff, agree, upgrade]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auditor",
        description="Audit every transformers model type: meta builds, the compile decorator, pickling.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _subcommands():
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as exc:
        print(f"auditor: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
