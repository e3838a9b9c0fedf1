"""`auditor agree RESULTS --policies A,B`: where two decorator policies disagree, and where an
engine's emulated gates and its own construction give a type different verdicts without the release
record saying why (exit 1 if either)."""

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
                    "message word for word. Where a policy is an engine's and the run has its serves rows, "
                    "also its own construction's verdict against its emulated gates' per type, each "
                    "difference with the release record's reason or marked unexplained. Writes "
                    "agreement-A-B.md next to the results; exit 1 on a disagreement or an unexplained "
                    "difference.")
    p.add_argument("results", type=Path, help="a results.jsonl file or run directory")
    p.add_argument("--policies", default=_DEFAULT, help=f"the two policies (default: {_DEFAULT})")
    p.add_argument("-o", "--output", type=Path, help="directory for the markdown (default: the run's)")
    p.set_defaults(handler=run_agree)


def run_agree(args: argparse.Namespace) -> int:
    from auditor.report.agreement import (
        compare_policies,
        compare_runs,
        compare_verdicts,
        missing_policies,
        render_markdown,
        render_runs,
        render_verdicts,
    )

    names = [name.strip() for name in args.policies.split(",") if name.strip()]
    if len(names) != 2:
        raise UsageError(f"--policies takes exactly two policies, e.g. {_DEFAULT}")
    run = read_results(args.results)
    ran = {name: compare_runs(run, name) for name in engines.names()
           if any(r.check == "outputs" and r.component.split("/")[0] == name for r in run.results)}
    missing = missing_policies(run, *names)
    if missing and not (ran and args.policies == _DEFAULT):
        present = {r.policy for r in run.results}
        raise UsageError(f"{run.path} has no rows for policy {', '.join(missing)} "
                         f"(it has: {', '.join(sorted(p for p in present if p)) or 'none'})")
    agreement = compare_policies(run, *names) if not missing else None
    text = render_markdown(agreement) if agreement is not None else (
        f"# {run.path}\n\nNo rows of policies {', '.join(missing)}: only the engines' real runs are compared.\n")
    verdicts = [found for name in names if name in engines.names()
                for found in [compare_verdicts(run, name, _explained(run, name))] if found is not None]
    text += "".join("\n" + render_verdicts(found) for found in verdicts)
    text += "".join("\n" + render_runs(engines.get(name).title, found) for name, found in ran.items())
    outdir = args.output or run.path.parent
    path = outdir / f"agreement-{names[0]}-{names[1]}.md"
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(text, end="")
    print(f"Written to {path}", file=sys.stderr)
    unexplained = any(found.unexplained for found in verdicts) or any(ran.values())
    return EXIT_OK if (agreement is None or agreement.agrees) and not unexplained else EXIT_FINDINGS


def _explained(run, name: str) -> dict[str, str]:
    """The engine release record's reasons for its differences, of the release the run recorded."""
    from auditor.engines.interface import pick_release

    engine = engines.get(name)
    recorded = next((info.version for info in run.info.engines if info.name == name), None)
    return dict(pick_release(engine.releases, recorded).differs)
