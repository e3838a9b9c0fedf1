"""`auditor agree RESULTS --policies A,B`: where two decorator policies disagree (exit 1 if any)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import auditor.engines as engines
from auditor.cli import EXIT_FINDINGS, EXIT_OK, UsageError, read_results

# The emulation's policy against the first engine's real decorator.
_ENGINE_POLICY = engines.decorator_policies()[0]
_DEFAULT = f"legacy,{_ENGINE_POLICY}"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "agree", help=f"compare two decorator policies cell by cell (e.g. legacy against {_ENGINE_POLICY})",
        description="Compare two decorator policies of one run cell by cell: status, and the refusal "
                    "message word for word. Writes agreement-A-B.md next to the results.")
    p.add_argument("results", type=Path, help="a results.jsonl file or run directory")
    p.add_argument("--policies", default=_DEFAULT, help=f"the two policies (default: {_DEFAULT})")
    p.add_argument("-o", "--output", type=Path, help="directory for the markdown (default: the run's)")
    p.set_defaults(handler=run_agree)


def run_agree(args: argparse.Namespace) -> int:
    from auditor.report.agreement import compare_policies, missing_policies, render_markdown

    names = [name.strip() for name in args.policies.split(",") if name.strip()]
    if len(names) != 2:
        raise UsageError(f"--policies takes exactly two policies, e.g. {_DEFAULT}")
    run = read_results(args.results)
    missing = missing_policies(run, *names)
    if missing:
        present = {r.policy for r in run.results}
        raise UsageError(f"{run.path} has no rows for policy {', '.join(missing)} "
                         f"(it has: {', '.join(sorted(p for p in present if p)) or 'none'})")
    agreement = compare_policies(run, *names)
    text = render_markdown(agreement)
    outdir = args.output or run.path.parent
    path = outdir / f"agreement-{names[0]}-{names[1]}.md"
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(text, end="")
    print(f"Written to {path}", file=sys.stderr)
    return EXIT_OK if agreement.agrees else EXIT_FINDINGS
