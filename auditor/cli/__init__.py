"""The command line: the only place that prints, owns paths, and picks exit codes.

Each subcommand is a module with `add_parser(subparsers)` and `run(args) -> int`, a thin layer
over `auditor.api`: the library raises `AuditorError`s, and only here do they become messages
and exit codes. Exit codes (README, "Exit codes", has them per subcommand): 0 success, 1 a
finding the command exists to report (regressions, disagreements, cells `--fail-on` names),
2 bad input (found before any work), 3 the run could not go on (the worker pool, the Ray
cluster or the results file failed; every finished row is kept and --resume continues),
130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from auditor import __version__
from auditor.core.errors import InputError, RunStopped

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class UsageError(InputError):
    """Bad input found by a subcommand: printed as `auditor: error: ...`, exit 2."""


def read_results(path, context: str = ""):
    """The run in a results file, for a subcommand: a file that cannot be read is a UsageError;
    one whose tail was cut short (a killed or crashed sweep) is read without it, with a note."""
    from auditor.core.results import ResultsFileError, read_run

    try:
        run = read_run(path)
    except ResultsFileError as exc:
        raise UsageError(f"{context}{exc}") from None
    if run.damage is not None:
        note_damage(run)
    return run


def note_damage(run) -> None:
    """The warning of a run read without its torn tail: which line stopped the reading and what
    was left out; the command goes on with the model types finished before it."""
    damage = run.damage
    where = (f"line {damage.torn_at} stopped the reading (cut short or not JSON: a killed sweep, or a tail "
             "overwritten)" if damage.torn_at else "it was cut short (a killed sweep?)")
    print(f"auditor: warning: {run.path}: {where}; read without {damage.note()}, with the "
          f"{len(run.done_model_types)} model types finished before it. `auditor sweep --resume` on it "
          "runs the others again.", file=sys.stderr)


def _subcommands():
    from auditor.cli import agree, atlas, baseline, bisect, diff, gate, report, sweep, upgrade, versions

    return [sweep, report, diff, gate, baseline, agree, upgrade, bisect, versions, atlas]


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
    except InputError as exc:  # UsageError, ResultsFileError, and the API's bad-input errors
        print(f"auditor: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RunStopped as exc:
        print(f"auditor: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
