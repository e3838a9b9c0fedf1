"""`auditor sweep`: build every selected model type in worker processes, one row each.

A thin layer over `auditor.api.sweeps`: the options become a SweepRequest, its events print.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from pathlib import Path

from auditor.api import sweeps as api_sweep
from auditor.api.sweeps import DEFAULT_TIMEOUT, SweepEvents, SweepRequest, run_request
from auditor.cli import EXIT_FAILED, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK
from auditor.cli.progress import Progress
from auditor.core.errors import RunInterrupted, RunStopped

DEFAULT_CHECKS = ",".join(api_sweep.DEFAULT_CHECKS)
DEFAULT_POLICIES = ",".join(api_sweep.DEFAULT_POLICIES)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run the checks on every selected model type",
                              description=__doc__)
    sel = p.add_argument_group("selection")
    sel.add_argument("--models", action="append", default=[], metavar="A,B,...",
                     help="model types or regular expressions to audit (default: all)")
    sel.add_argument("--exclude", action="append", default=[], metavar="A,B,...",
                     help="model types or regular expressions to leave out")
    sel.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                     help="import this module or .py file first (in every worker too), "
                          "so its AutoConfig/AutoModel registrations are audited")
    sel.add_argument("--remote-code", action="append", default=[], metavar="DIR",
                     help="also audit this local remote-code model directory (loaded with "
                          "trust_remote_code=True); alone, without --models, only these are audited")
    sel.add_argument("--shard", metavar="I/N",
                     help="run only the I-th of N deterministic, disjoint slices of the selection "
                          "(for CI matrices; `auditor report` merges the shards)")
    what = p.add_argument_group("checks")
    what.add_argument("--checks", default=DEFAULT_CHECKS,
                      help=f"comma-separated checks (default: {DEFAULT_CHECKS})")
    what.add_argument("--policies", default=DEFAULT_POLICIES,
                      help="decorator policies: legacy, fixed, fixed-no-config-skip, vllm (the real "
                           f"decorator, needs vLLM), external:MODULE:ATTR (default: {DEFAULT_POLICIES})")
    what.add_argument("--device", choices=("meta", "cpu", "cuda"),
                      help="where the checks that run models (tiny, compile) build them; build and decorate "
                           "always use the meta device (default: meta, or cpu when such a check is selected)")
    what.add_argument("--backend",
                      help="torch.compile backend of the compile check: inductor, aot_eager, eager, ... "
                           "(default: inductor on cuda, aot_eager on cpu)")
    what.add_argument("--compile-encoders", action="store_true",
                      help="the compile check also compiles each encoder component (image, video, audio)")
    what.add_argument("--compile-policy", default="fixed",
                      help="the decorator policy the compile check builds under (default: fixed)")
    what.add_argument("--build-per-policy", action="store_true",
                      help="one real meta build per policy and component instead of one recorded build "
                           "shared by the project's own policies (slower; the results are the same)")
    run = p.add_argument_group("execution")
    run.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                     help="worker processes (default: the number of cores)")
    run.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                     help=f"seconds per model type before it is a timeout (default {DEFAULT_TIMEOUT:g})")
    run.add_argument("--max-memory", default="auto",
                     help="resident memory per worker before its model is `oom`, e.g. 4G, 512M, "
                          "'none' (default auto: 80%% of RAM shared by the workers)")
    run.add_argument("--max-tasks-per-worker", type=int, default=0,
                     help="replace a worker after this many model types (default 0: never)")
    run.add_argument("--online", action="store_true",
                     help="allow the Hugging Face hub (default: offline, HF_HUB_OFFLINE=1)")
    run.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="local worker processes (default), or tasks on a Ray cluster (the 'ray' extra)")
    run.add_argument("--ray-address", metavar="HOST:PORT",
                     help="with --executor ray: the cluster to join (default: start a local one with "
                          "--jobs CPUs, on loopback, for this run only)")
    run.add_argument("--gpus-per-task", type=float, default=0.0, metavar="N",
                     help="with --executor ray: GPUs each task asks for when --checks has a check that "
                          "runs models (compile, tiny), so those tasks land on GPU nodes (default 0)")
    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, help="run directory (default: REPORTS/RUN_ID)")
    out.add_argument("--reports", type=Path, default=Path("reports"), help="reports root (default: reports)")
    out.add_argument("--run-id", help="name of the run directory (default: the UTC time)")
    out.add_argument("--label", default="", help="environment label shown in reports")
    out.add_argument("--resume", action="store_true",
                     help="continue results.jsonl: skip the model types it has whole, repair a cut tail; "
                          "refused when this command is another experiment (checks, policies, device, ...)")
    out.add_argument("--overwrite", action="store_true", help="replace an existing results.jsonl")
    out.add_argument("--junit", type=Path, metavar="FILE",
                     help="also write the run as JUnit XML (one testcase per cell) for CI test reporters")
    out.add_argument("--markdown", type=Path, metavar="FILE",
                     help="also write the Markdown summary here, e.g. $GITHUB_STEP_SUMMARY "
                          "(summary.md is always written next to report.html)")
    gate = p.add_argument_group("gating")
    gate.add_argument("--fail-on", action="append", default=[], metavar="[COLUMN_GLOB=]STATUS,...",
                      help="exit 1 when any cell has one of these statuses, e.g. refused,check-error, or "
                           "per column: decorate/*/legacy=refused (expected-by-design failures never match)")
    p.set_defaults(handler=run_sweep)


def run_sweep(args: argparse.Namespace) -> int:
    # Python leaves SIGINT ignored when the shell started us that way (a background job); Ctrl-C
    # must always stop the pool cleanly and keep the rows, so take it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from auditor.report.gate import describe_hits, parse_fail_on

    rules = parse_fail_on(args.fail_on)
    events = _PrintedEvents()
    try:
        outcome = run_request(request_of(args), events, rules)
    except RunInterrupted as stop:
        print(f"\nInterrupted: {stop.done} of {stop.total} model types finished; every finished "
              f"row is in {stop.results_path}.\nResume with: {stop.resume_command}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunStopped as stop:
        print(f"\nauditor: the sweep stopped: {stop}\n{stop.done} of {stop.total} model types finished; "
              f"every finished row is in {stop.results_path}.\nResume with: {stop.resume_command}",
              file=sys.stderr)
        return EXIT_FAILED
    print(f"Done: {outcome.done} model type{'s' if outcome.done != 1 else ''} in {events.elapsed():.0f} s."
          if outcome.total else "Done: nothing to do.", file=sys.stderr)
    _print_findings(outcome.run)
    print(f"Results in {outcome.outdir}/ (report.html, summary.md, results.csv, matrix.csv)", file=sys.stderr)
    for extra in outcome.files[4:]:
        print(f"Wrote {extra}", file=sys.stderr)
    if outcome.worker_log is not None:
        print(f"Workers' own output (transformers warnings, crash tracebacks): {outcome.worker_log}", file=sys.stderr)
    if outcome.gate_hits:
        print(f"auditor: {describe_hits(outcome.gate_hits)}", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_OK


def request_of(args: argparse.Namespace) -> SweepRequest:
    """The SweepRequest of the command line."""
    return api_sweep.make_request(
        output=args.output, models=args.models, exclude=args.exclude, plugins=args.plugin,
        remote_code=args.remote_code, shard=args.shard, checks=args.checks, policies=args.policies,
        device=args.device, backend=args.backend, compile_encoders=args.compile_encoders,
        compile_policy=args.compile_policy, build_per_policy=args.build_per_policy, jobs=args.jobs,
        timeout=args.timeout, max_memory=args.max_memory, max_tasks_per_worker=args.max_tasks_per_worker,
        online=args.online, executor=args.executor, ray_address=args.ray_address,
        gpus_per_task=args.gpus_per_task, reports=args.reports, run_id=args.run_id, label=args.label,
        resume=args.resume, overwrite=args.overwrite, junit=args.junit, markdown=args.markdown,
        command=shlex.join(["auditor", *sys.argv[1:]]))


class _PrintedEvents(SweepEvents):
    """The sweep's notes on stderr, and its progress (a bar on a terminal, lines in a CI log)."""

    def __init__(self) -> None:
        self.progress: Progress | None = None

    def note(self, text: str) -> None:
        print(text, file=sys.stderr)

    def started(self, total: int) -> None:
        self.progress = Progress(total)

    def finished_type(self, model_type: str, rows) -> None:
        self.progress.update(model_type, rows)

    def ended(self) -> None:
        if self.progress is not None:
            self.progress.close()

    def elapsed(self) -> float:
        return self.progress.elapsed() if self.progress is not None else 0.0


def _print_findings(run) -> None:
    """What the whole run found, per column: the lines that head report.html (from the run the
    tables were just made of, not read again)."""
    from auditor.report.matrix import build_matrix
    from auditor.report.summary import findings

    for finding in findings(build_matrix([run])):
        print(f"  {finding.text()}", file=sys.stderr)
