"""`auditor atlas DIR`: the compatibility atlas, every model type across transformers and engine releases.

DIR keeps one DuckDB database (DIR/atlas.duckdb: the runs, their environments, every row, and the
views `verdicts` and `first_broken`, for SQL) and a static site rendered from it (DIR/site/:
index.html, a page per model type and per release, a search box; it opens from the file system).

Runs come in two ways. `--add RUN...` imports run folders as they are (a nightly's, another
machine's). `--transformers` sweeps releases: a list (5.24.0,5.25.0) or a range (5.20.0..5.25.0,
every final release between, from the package index); the transformers installed here is swept by
this interpreter, every other release in its own reused venv (.nox/releases/RELEASE/, as `auditor
versions` makes them). Each (transformers, torch, Python, engine releases, checks, model types) is
one run, kept in DIR/runs/; a run already in the atlas is never swept again, so a second identical
call sweeps nothing and adding a release sweeps only it. `--engine NAME==VERSION` installs an
engine's release beside each transformers, as `sweep --engine` does; a release outside the
engine's pin is skipped and said so. With `--executor ray --ray-address HOST:PORT` each run is one
task on that cluster: a node with room makes the run's venv there (reused by its later runs of
that release), sweeps it with --jobs workers (default 1) and sends the run back, which goes into
the database whole; several runs at once. A node lost mid-run loses that run only, run again once
on another node. Without --ray-address, a Ray cluster on this machine for this call only.

Exit codes: 0; 2 bad input (found before any sweep), or a release that could not be installed or
swept (the runs finished before it are kept); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor.cli import EXIT_INTERRUPTED, EXIT_OK
from auditor.cli.releases import PrintedEvents, add_engine_argument
from auditor.core.errors import RunInterrupted
from auditor.sweeping.options import add_side_arguments
from auditor.sweeping.sides import side_sweep_of

# The sweep options every release's sweep gets, as the sweep declares them.
SIDE_OPTIONS = ("models", "exclude", "checks", "jobs", "timeout", "executor", "ray_address")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("atlas", help="the compatibility atlas: releases swept into one database and a static site",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", type=Path, metavar="DIR", help="the atlas: DIR/atlas.duckdb, DIR/site/, DIR/runs/")
    p.add_argument("--transformers", metavar="RELEASES",
                   help="releases to sweep: 5.24.0,5.25.0 or a range 5.20.0..5.25.0 (from the package index)")
    p.add_argument("--add", nargs="+", default=[], metavar="RUN", help="run folders (or results.jsonl files) to import")
    sweep = p.add_argument_group("sweep options, the same for every release (defaults: the sweep's)")
    add_side_arguments(sweep, SIDE_OPTIONS)
    add_engine_argument(sweep)
    p.set_defaults(handler=run_atlas)


def run_atlas(args: argparse.Namespace) -> int:
    from auditor.atlas.grid import update
    from auditor.atlas.plan import plan_atlas

    plan = plan_atlas(args.directory, side_sweep_of(args, SIDE_OPTIONS), transformers=args.transformers,
                      add=args.add, engines=args.engines)
    for why in plan.skipped:
        print(f"auditor atlas: skipped {why}", file=sys.stderr)
    try:
        outcome = update(plan, _Events())
    except (KeyboardInterrupt, RunInterrupted):
        print(f"\nInterrupted; the runs finished so far are in {plan.directory}. Run the same command again to "
              "sweep the rest.", file=sys.stderr)
        return EXIT_INTERRUPTED
    seconds = ", ".join(f"{name} {value:.1f} s" for name, value in outcome.seconds.items())
    print(f"{len(outcome.swept)} release{'s' if len(outcome.swept) != 1 else ''} swept"
          f"{' (' + ', '.join(outcome.swept) + ')' if outcome.swept else ''}, "
          f"{len(outcome.present)} already in the atlas, {len(outcome.added)} run(s) added; {seconds}")
    print(f"wrote {outcome.database}")
    print(f"wrote {outcome.pages} files under {outcome.directory / 'site'}/ (open index.html)")
    return EXIT_OK


class _Events(PrintedEvents):
    def __init__(self) -> None:
        super().__init__("atlas")

    def present(self, planned) -> None:
        print(f"auditor atlas: transformers {planned.release}: in the atlas already, not swept again", file=sys.stderr)

    def sweeping(self, planned) -> None:
        where = ("here" if planned.here else f"its venv ({planned.outdir.name})") if not planned.on_cluster else \
            f"on the Ray cluster, in its venv there ({planned.outdir.name})"
        print(f"auditor atlas: sweeping transformers {planned.release} {where}", file=sys.stderr, flush=True)

    def added(self, run, swept: bool, seconds: float) -> None:
        how = f"swept in {seconds:.0f} s" if swept else "imported"
        print(f"auditor atlas: {run.info.environment}: {len(run.results)} rows {how}", file=sys.stderr)
