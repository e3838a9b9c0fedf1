"""`auditor sweep`: build every selected model type in worker processes, one row each."""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import sys
from pathlib import Path

from auditor.cli import EXIT_INTERRUPTED, EXIT_OK, UsageError
from auditor.cli.progress import Progress
from auditor.results import RESULTS_FILE, ResultsFileError, ResultsWriter, done_model_types, read_run

DEFAULT_TIMEOUT = 300.0
DEFAULT_CHECKS = "build,decorate"
DEFAULT_POLICIES = "legacy,fixed,fixed-no-config-skip"


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
    what = p.add_argument_group("checks")
    what.add_argument("--checks", default=DEFAULT_CHECKS,
                      help=f"comma-separated checks (default: {DEFAULT_CHECKS})")
    what.add_argument("--policies", default=DEFAULT_POLICIES,
                      help="decorator policies: legacy, fixed, fixed-no-config-skip, vllm (the real "
                           f"decorator, needs vLLM), external:MODULE:ATTR (default: {DEFAULT_POLICIES})")
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
    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, help="run directory (default: REPORTS/RUN_ID)")
    out.add_argument("--reports", type=Path, default=Path("reports"), help="reports root (default: reports)")
    out.add_argument("--run-id", help="name of the run directory (default: the UTC time)")
    out.add_argument("--label", default="", help="environment label shown in reports")
    out.add_argument("--resume", action="store_true", help="skip model types already in results.jsonl")
    out.add_argument("--overwrite", action="store_true", help="replace an existing results.jsonl")
    p.set_defaults(handler=run_sweep)


def run_sweep(args: argparse.Namespace) -> int:
    options, settings, outdir = _validate(args)
    if not args.online:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"

    from auditor import cases
    from auditor.runinfo import probe

    try:
        cases.load_plugins(settings.plugins)
        known = cases.discover()
        selected = cases.select(known, _split(args.models), _split(args.exclude))
    except cases.SelectionError as exc:
        raise UsageError(str(exc)) from None
    print(f"Found {len(known)} model types; {len(selected)} selected.", file=sys.stderr)

    path = outdir / RESULTS_FILE
    already: set[str] = set()
    if args.resume and path.exists():
        try:
            already = done_model_types(read_run(path).results)
        except ResultsFileError as exc:
            raise UsageError(f"cannot resume: {exc}") from None
        print(f"Resuming: {len(already)} model types already done.", file=sys.stderr)
    todo = [case for case in selected if case.model_type not in already]

    info = probe(shlex.join(["auditor", *sys.argv[1:]]), device="meta", checks=options.checks, label=args.label)
    return _execute(todo, options, settings, path, info, append=bool(already), args=args)


def _execute(todo, options, settings, path: Path, info, *, append: bool, args) -> int:
    from auditor.pool import PoolError, WorkerPool

    progress = Progress(len(todo))
    writer = ResultsWriter(path, info, append=append)
    interrupted = False
    try:
        for batch in WorkerPool(settings, options).run(todo):
            writer.write_all(batch)
            if batch:
                progress.update(batch[0].model_type, batch)
    except KeyboardInterrupt:
        interrupted = True
    except PoolError as exc:
        raise UsageError(f"the worker pool failed: {exc}") from None
    finally:
        writer.close()
        progress.close()
    _write_tables(path.parent)
    if interrupted:
        print(f"\nInterrupted: {progress.done} of {len(todo)} model types finished; every finished "
              f"row is in {path}.\nResume with: auditor sweep --output {shlex.quote(str(path.parent))} "
              f"--resume {_selection_flags(args)}".rstrip(), file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"Done: {progress._summary() or 'nothing to do'}. Results in {path.parent}/", file=sys.stderr)
    return EXIT_OK


def _write_tables(outdir: Path) -> None:
    """results.csv, matrix.csv and report.html from everything in results.jsonl."""
    from auditor.report import write_report

    write_report([read_run(outdir)], outdir)


def _validate(args: argparse.Namespace):
    """Everything that can be wrong with the command line, found before any work starts."""
    from auditor.checks import Options, available
    from auditor.pool import PoolSettings

    checks = tuple(_split([args.checks]))
    unknown = [c for c in checks if c not in available()]
    if unknown or not checks:
        raise UsageError(f"unknown check(s) {', '.join(unknown) or '(none given)'}; available: {', '.join(available())}")
    _check_requirements(checks)
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.resume and args.overwrite:
        raise UsageError("--resume and --overwrite contradict each other")
    outdir = args.output or args.reports / (args.run_id or _default_run_id())
    _check_writable(outdir)
    if (outdir / RESULTS_FILE).exists() and not (args.resume or args.overwrite):
        raise UsageError(f"{outdir / RESULTS_FILE} exists; pass --resume to continue it or --overwrite to replace it")
    options = Options(policies=_validated_policies(args.policies), checks=checks,
                      shared_policy_build=not args.build_per_policy)
    settings = PoolSettings(
        jobs=args.jobs,
        timeout=args.timeout,
        max_memory=_memory_limit(args.max_memory, args.jobs),
        plugins=tuple(args.plugin),
        max_tasks_per_worker=max(0, args.max_tasks_per_worker),
    )
    return options, settings, outdir


def _check_requirements(checks: tuple[str, ...]) -> None:
    import importlib.util

    from auditor.checks import get

    for name in checks:
        missing = [module for module in get(name).requires if importlib.util.find_spec(module) is None]
        if missing:
            raise UsageError(f"check {name!r} needs {', '.join(missing)} installed "
                             f"(pip install 'model-sweep-auditor[{missing[0]}]')")


def _validated_policies(text: str) -> tuple[str, ...]:
    import importlib.util

    from auditor.decorators import get_policy

    policies = tuple(dict.fromkeys(_split([text])))
    if not policies:
        raise UsageError("--policies is empty")
    for name in policies:
        if name == "vllm" and importlib.util.find_spec("vllm") is None:
            raise UsageError("policy 'vllm' needs vLLM installed: pip install 'model-sweep-auditor[vllm]'")
        try:
            get_policy(name)
        except (ValueError, ImportError) as exc:
            raise UsageError(f"policy {name!r}: {exc}") from None
    return policies


def _check_writable(outdir: Path) -> None:
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        probe = outdir / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write to output directory {outdir}: {exc.strerror or exc}") from None


_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _memory_limit(text: str, jobs: int) -> int | None:
    value = text.strip().lower()
    if value in ("none", "0", "off"):
        return None
    if value == "auto":
        import psutil

        return int(psutil.virtual_memory().total * 0.8 / jobs)
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", value)
    if not match:
        raise UsageError(f"--max-memory {text!r} is not a size such as 4G, 512M or 'none'")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _split(values: list[str]) -> list[str]:
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _default_run_id() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")


def _selection_flags(args: argparse.Namespace) -> str:
    flags = [f"--models {shlex.quote(m)}" for m in args.models]
    flags += [f"--exclude {shlex.quote(m)}" for m in args.exclude]
    flags += [f"--plugin {shlex.quote(m)}" for m in args.plugin]
    flags += [f"--checks {shlex.quote(args.checks)}"] if args.checks != DEFAULT_CHECKS else []
    flags += [f"--policies {shlex.quote(args.policies)}"] if args.policies != DEFAULT_POLICIES else []
    return " ".join(flags)
