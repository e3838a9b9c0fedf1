"""`auditor gate NEW [--against BEFORE] [--expected FILE] [--markdown FILE]`: the nightly gate.

Exit 1 only on confirmed, unexpected failures of NEW: a finding (no rerun passed, not failing by
design) that the expected baseline does not list; without a baseline, one whose cell passed in
BEFORE (the night before); with neither, any finding. Flaky cells (failed, then passed on a
rerun) and failures the baseline lists never fail it. The Markdown (for $GITHUB_STEP_SUMMARY)
lists the new failures, the fixed cells (with the command that updates the baseline) and the
flaky cells apart. With --against, what changed since (a line per serving engine, the unchanged
ones too); --fail-on-engine NAME then exits 1 only when that engine lost a type.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from auditor.cli import EXIT_FINDINGS, EXIT_OK, UsageError, read_results
from auditor.cli.releases import add_fail_on_engine_argument
from auditor.sweeping.options import add_shared_argument


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("gate", help="the nightly gate: exit 1 on confirmed, unexpected failures only",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("new", type=Path, metavar="NEW", help="results.jsonl or run directory to judge")
    p.add_argument("--against", type=Path, metavar="BEFORE", help="the night before's run")
    add_shared_argument(p, "expected")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the gate's Markdown to FILE ('-': standard output), e.g. $GITHUB_STEP_SUMMARY")
    add_fail_on_engine_argument(p)
    p.set_defaults(handler=run_gate)


def run_gate(args: argparse.Namespace) -> int:
    from auditor import api
    from auditor.report.files import write_text
    from auditor.report.nightly import render_gate_markdown, render_gate_text

    expected = api.read_baseline(args.expected)
    new = read_results(args.new)
    before = read_results(args.against) if args.against is not None else None
    gate = api.nightly_gate(new, before, expected)
    hint = shlex.join(["auditor", "baseline", str(args.new), "-o", str(args.expected)]) if args.expected else ""
    markdown = render_gate_markdown(gate, hint)
    if args.markdown == "-":
        sys.stdout.write(markdown)
    elif args.markdown is not None:
        try:
            write_text(Path(args.markdown), markdown)
        except OSError as exc:
            raise UsageError(f"cannot write to {args.markdown}: {exc.strerror or exc}") from None
    print(render_gate_text(gate), end="", file=sys.stderr)
    changes = _changes(before, new)
    if gate.fixed and expected is not None:
        print(f"auditor: {len(gate.fixed)} cell(s) the baseline lists pass now; update it: {hint}", file=sys.stderr)
    if args.fail_on_engines:
        if changes is None:
            raise UsageError("--fail-on-engine needs --against: the night before whose verdicts it compares")
        return EXIT_FINDINGS if changes.regressed(tuple(args.fail_on_engines)) else EXIT_OK
    return EXIT_FINDINGS if gate.failed else EXIT_OK


def _changes(before, new):
    """What changed since the night before (auditor.report.changes: the count every output
    prints), printed a line per engine; None without --against."""
    from auditor.report.changes import changes, text_lines

    if before is None:
        return None
    found = changes(before, new)
    print("\n".join(text_lines(found)), file=sys.stderr)
    return found

