"""`auditor diff BASE NEW`: compare two runs cell by cell; exit 1 on regressions the allow list does not excuse.

It also lists config drift: per model type, how its default config changed between the runs
(keys removed, added, renamed, re-defaulted; attribute map and parallel plans; model class and
parameters), changes shared by many types once as a group; `--fail-on-drift` gates on it.

A regression is a cell (model type and column) that was `build` in BASE and is not in NEW; one
whose cell passed on a rerun (flaky) or whose failure --expected lists does not make it exit 1,
nor one that is part of a type's engine verdict change (a gate the new stop leaves unreached):
that type counts once, as a type the engine lost, which makes it exit 1. A line per engine says
what changed for it; --fail-on-engine NAME exits 1 only on the types that engine lost.
The allow file has one `model_type` or `model_type/column-prefix` per line (a prefix matches
whole `/` segments: `llava/decorate` covers decorate/legacy and decorate/fixed); `#` starts a comment.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.cli import EXIT_FINDINGS, EXIT_OK, UsageError, read_results
from auditor.cli.releases import add_fail_on_drift_argument, add_fail_on_engine_argument
from auditor.sweeping.options import add_shared_argument


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("diff", help="compare two runs; exit 1 on regressions",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path, metavar="BASE", help="results.jsonl or run directory to compare against")
    p.add_argument("new", type=Path, metavar="NEW", help="results.jsonl or run directory to check")
    p.add_argument("--allow", type=Path, metavar="FILE", help="regressions to accept, one per line")
    add_shared_argument(p, "expected")
    p.add_argument("--output", "-o", type=Path, metavar="OUTDIR",
                   help="where to write diff.md and diff.html (default: NEW's directory)")
    add_fail_on_drift_argument(p)
    p.add_argument("--junit", type=Path, metavar="FILE",
                   help="also write the diff as JUnit XML: the regressions fail, fixes and changed failures "
                        "pass with a note, allowed regressions are skipped")
    add_fail_on_engine_argument(p)
    p.set_defaults(handler=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    from auditor import api
    from auditor.report.diff_render import render_diff_text
    from auditor.report.files import write_text

    if args.allow is not None and not args.allow.is_file():
        raise UsageError(f"cannot read allow list {args.allow}: no such file")
    expected = api.read_baseline(args.expected)
    base, new = read_results(args.base), read_results(args.new)
    diff = api.diff(base, new, args.allow, expected)
    outdir = args.output if args.output is not None else new.path.parent
    paths = api.write_diff(diff, outdir)
    if args.junit is not None:
        try:
            paths.append(write_text(args.junit, api.render_junit(diff)))
        except OSError as exc:
            raise UsageError(f"cannot write to {args.junit}: {exc.strerror or exc}") from None
    print(render_diff_text(diff), end="")
    print("\n" + "\n".join(f"wrote {p}" for p in paths))
    drifted = args.fail_on_drift and diff.drift is not None and diff.drift.types
    if drifted:
        print(f"auditor: --fail-on-drift: {diff.drift.summary()}", file=sys.stderr)
    return EXIT_FINDINGS if regressed(diff, args) or drifted else EXIT_OK


def regressed(diff, args: argparse.Namespace) -> bool:
    """The diff's verdict (RunDiff.failing) under --fail-on-engine, if given."""
    return diff.failing(tuple(getattr(args, "fail_on_engines", ()) or ()))
