"""`auditor sweep`: build every selected model type in worker processes, one row each."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime
import os
import re
import shlex
import signal
import sys
from pathlib import Path

from auditor.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError
from auditor.cli.progress import Progress
from auditor.core.results import (
    FORMAT_VERSION,
    RESULTS_FILE,
    TORN_SUFFIX,
    ResultsFileError,
    ResultsWriter,
    read_run,
    repair,
)

DEFAULT_TIMEOUT = 300.0
DEFAULT_CHECKS = "build,decorate,pickle"
DEFAULT_POLICIES = "legacy,fixed,fixed-no-config-skip"
WORKER_LOG = "workers.log"  # the workers' stdout and stderr, in the output directory


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
    p.set_defaults(handler=run_sweep)


def run_sweep(args: argparse.Namespace) -> int:
    # Python leaves SIGINT ignored when the shell started us that way (a background job); Ctrl-C
    # must always stop the pool cleanly and keep the rows, so take it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    options, settings, outdir = _validate(args)
    if not args.online:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"

    from auditor.core.runinfo import probe
    from auditor.models import cases
    from auditor.remote.workspace import remove_orphaned_workdirs

    orphans = remove_orphaned_workdirs()
    if orphans:
        print(f"Removed {len(orphans)} scratch director{'y' if len(orphans) == 1 else 'ies'} left in "
              f"{Path(orphans[0]).parent} by auditor processes that were killed.", file=sys.stderr)

    try:
        cases.load_plugins(settings.plugins)
        known = cases.discover()
        selected = [] if args.remote_code and not args.models else cases.select(
            known, _split(args.models), _split(args.exclude))
        selected += _remote_cases(args.remote_code)
        if args.shard:
            selected = cases.shard(selected, *cases.parse_shard(args.shard))
    except cases.SelectionError as exc:
        raise UsageError(str(exc)) from None
    print(f"Found {len(known)} model types; {len(selected)} selected.", file=sys.stderr)

    info = probe(shlex.join(["auditor", *sys.argv[1:]]), device=_header_device(options), checks=options.checks,
                 label=args.label, shard=_shard_text(args.shard), experiment=_experiment(options, args))
    path = outdir / RESULTS_FILE
    resumed = args.resume and path.exists()
    already = _resume(path, info) if resumed else set()
    todo = [case for case in selected if case.model_type not in already]
    if not resumed:  # a new run (or --overwrite): a new log; --resume appends to the old one
        (outdir / WORKER_LOG).unlink(missing_ok=True)
    return _execute(todo, options, settings, path, info, append=resumed, args=args)


def _experiment(options, args: argparse.Namespace) -> dict:
    """What the header records beyond RunInfo's own fields, so that a resume can be checked."""
    return {"policies": list(options.policies), "device": options.device, "backend": options.backend,
            "compile_policy": options.compile_policy, "compile_encoders": options.compile_encoders,
            "build_per_policy": not options.shared_policy_build, "plugins": list(options.plugins),
            "online": bool(args.online)}


# What makes two sweeps one experiment: (what differs, where its value is, the option that sets it).
_SAME_EXPERIMENT = (
    ("checks", lambda info: ",".join(info.checks), "--checks"),
    ("policies", lambda info: ",".join(info.experiment.get("policies", [])), "--policies"),
    ("device", lambda info: info.experiment.get("device"), "--device"),
    ("backend", lambda info: info.experiment.get("backend"), "--backend"),
    ("compile policy", lambda info: info.experiment.get("compile_policy"), "--compile-policy"),
    ("encoders compiled", lambda info: info.experiment.get("compile_encoders"), "--compile-encoders"),
    ("a build per policy", lambda info: info.experiment.get("build_per_policy"), "--build-per-policy"),
    ("plugins", lambda info: ",".join(info.experiment.get("plugins", [])), "--plugin"),
    ("hub allowed", lambda info: info.experiment.get("online"), "--online"),
    ("label", lambda info: info.label, "--label"),
    ("shard", lambda info: info.shard, "--shard"),
    ("Python", lambda info: info.python, "the Python that runs the auditor"),
    ("torch", lambda info: info.torch, "the installed torch"),
    ("transformers", lambda info: info.transformers, "the installed transformers"),
)


def _resume(path: Path, info) -> set[str]:
    """The model types a resumed run already has, after checking that this command continues the
    same experiment and repairing a torn tail. UsageError (exit 2) before any work otherwise."""
    try:
        run = read_run(path)
    except ResultsFileError as exc:
        raise UsageError(f"cannot resume: {exc}") from None
    if run.format_version != FORMAT_VERSION:
        raise UsageError(f"cannot resume {path}: an older auditor wrote it (results format {run.format_version}, "
                         "without completion records); start a new run (another --output, or --overwrite)")
    conflicts = [f"{option} ({what}): the run has {_shown(get(run.info))}, this command {_shown(get(info))}"
                 for what, get, option in _SAME_EXPERIMENT if get(run.info) != get(info)]
    if conflicts:
        raise UsageError(f"cannot resume {path}: this command is another experiment than the one it holds; "
                         "rows of both would mix in one file:\n  " + "\n  ".join(conflicts) +
                         "\nUse the resume command the interrupted sweep printed, or start a new run.")
    try:
        damage = repair(path)
    except OSError as exc:
        raise UsageError(f"cannot repair {path} before resuming: {exc.strerror or exc}") from None
    if damage is not None:
        print(f"Repaired {path}: took out {damage.note()} (kept in {path.name}{TORN_SUFFIX}); "
              "those model types run again.", file=sys.stderr)
    already = run.done_model_types
    print(f"Resuming: {len(already)} model types already done.", file=sys.stderr)
    return already


def _shown(value) -> str:
    return "(none)" if value in ("", None, []) else repr(value) if isinstance(value, str) else str(value)


def _header_device(options) -> str:
    from auditor.checks import model_runners
    from auditor.core.runinfo import describe_device

    return describe_device(options.device) if model_runners(options.checks) else "meta"


def _execute(todo, options, settings, path: Path, info, *, append: bool, args) -> int:
    from auditor.engine.pool import PoolError

    tables = _Tables(path.parent)
    with _ray_for_pickle(args, options) as options:
        try:
            executor = _executor(args, settings, options)
        except PoolError as exc:  # e.g. a Ray address that cannot be reached: before any row
            raise UsageError(str(exc)) from None
        progress, stopped = _drive(executor, todo, path, info, tables, append=append, args=args)
    run = None
    try:
        run = tables.finish()
    except OSError as exc:
        stopped = stopped or f"cannot write the tables and report in {path.parent}: {exc.strerror or exc}"
    resume = f"Resume with: {_resume_command(args, options, path.parent)}"
    if stopped == _INTERRUPTED:
        print(f"\nInterrupted: {progress.done} of {len(todo)} model types finished; every finished "
              f"row is in {path}.\n{resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if stopped:
        print(f"\nauditor: the sweep stopped: {stopped}\n{progress.done} of {len(todo)} model types finished; "
              f"every finished row is in {path}.\n{resume}", file=sys.stderr)
        return EXIT_FAILED
    print(f"Done: {progress.done} model type{'s' if progress.done != 1 else ''} in {progress.elapsed():.0f} s."
          if todo else "Done: nothing to do.", file=sys.stderr)
    _print_findings(run)
    print(f"Results in {path.parent}/ (report.html, results.csv, matrix.csv)", file=sys.stderr)
    _mention_worker_log(path.parent)
    return EXIT_OK


_INTERRUPTED = "interrupted"


def _print_findings(run) -> None:
    """What the whole run found, per column: the lines that head report.html (from the run the
    tables were just made of, not read again)."""
    from auditor.report.matrix import build_matrix
    from auditor.report.summary import findings

    for finding in findings(build_matrix([run])):
        print(f"  {finding.text()}", file=sys.stderr)


def _drive(executor, todo, path: Path, info, tables: _Tables, *, append: bool, args) -> tuple[Progress, str]:
    """Run the sweep, writing each model type's rows as one unit as they come; the progress, and
    why it stopped early: "" (it did not), _INTERRUPTED, or what failed."""
    from auditor.engine.pool import PoolError

    progress = Progress(len(todo))
    try:
        writer = ResultsWriter(path, info, append=append)
    except OSError as exc:
        progress.close()
        return progress, f"cannot write {path}: {exc.strerror or exc}"
    stopped = ""
    try:
        for batch in executor.run(todo):
            if batch:
                writer.write_type(batch[0].model_type, batch)
                progress.update(batch[0].model_type, batch)
            tables.rows_written(last=progress.done == len(todo))
    except KeyboardInterrupt:
        stopped = _INTERRUPTED
    except PoolError as exc:
        stopped = f"the {'worker pool' if args.executor == 'local' else 'Ray executor'} failed: {exc}"
    except OSError as exc:  # a full disk, a file size limit: the unit being written is a torn tail
        stopped = f"cannot write {path}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            writer.close()
        progress.close()
    return progress, stopped


class _Tables:
    """results.csv, matrix.csv and report.html, from everything in results.jsonl.

    Once the last model type's rows are written they are made on a thread of their own, while
    the workers and the Ray cluster stop (a second or more each); `finish()` waits for them. An
    interrupted sweep, or one with rows after the last model type's, gets them made in
    `finish()` instead, from every row there is.
    """

    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._future: concurrent.futures.Future | None = None
        self._stale = False

    def rows_written(self, *, last: bool) -> None:
        if self._future is not None:
            self._stale = True  # more rows after the start: made again in finish()
        elif last:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="auditor-tables")
            self._future = self._thread.submit(_write_tables, self.outdir)

    def finish(self):
        """Wait for (or make) the tables; the run they were made of."""
        if self._future is not None:
            self._thread.shutdown()  # waits for it
            if not self._stale:
                return self._future.result()  # raises what writing them raised
        return _write_tables(self.outdir)


def _mention_worker_log(outdir: Path) -> None:
    log = outdir / WORKER_LOG
    if log.exists() and log.stat().st_size:
        print(f"Workers' own output (transformers warnings, crash tracebacks): {log}", file=sys.stderr)


@contextlib.contextmanager
def _ray_for_pickle(args: argparse.Namespace, options):
    """The options, with the one local Ray cluster that the pool's workers share for the pickle
    check's Ray round trip (rather than a cluster per worker). It starts while the workers
    start; a cluster that does not start is reported in every Ray row, and the other checks go
    on. Under --executor ray the tasks use the sweep's own cluster; without Ray installed the
    column is skipped."""
    from dataclasses import replace

    from auditor.remote.ray_trip import LocalCluster, ray_missing

    if "pickle" not in options.checks or args.executor != "local" or ray_missing():
        yield options
        return
    print("Starting a local Ray cluster for the pickle check's Ray round trip...", file=sys.stderr)
    cluster = LocalCluster(cpus=args.jobs)
    try:
        yield replace(options, ray_cluster=cluster.start())
    finally:
        cluster.close()


def _write_tables(outdir: Path):
    """results.csv, matrix.csv and report.html from everything in results.jsonl; the run read."""
    from auditor.report import write_report

    run = read_run(outdir)
    write_report([run], outdir)
    return run


def _validate(args: argparse.Namespace):
    """Everything that can be wrong with the command line, found before any work starts."""
    from auditor.checks import Options, available
    from auditor.engine.pool import PoolSettings

    checks = tuple(_split([args.checks]))
    unknown = [c for c in checks if c not in available()]
    if unknown or not checks:
        raise UsageError(f"unknown check(s) {', '.join(unknown) or '(none given)'}; available: {', '.join(available())}")
    _check_requirements(checks)
    _check_executor(args, checks)
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
    _refuse_paths(_split(args.models))
    _remote_cases(args.remote_code)
    device, backend = _validated_device(args, checks)
    options = Options(policies=_validated_policies(args.policies), checks=checks, plugins=tuple(args.plugin),
                      shared_policy_build=not args.build_per_policy, device=device, backend=backend,
                      compile_encoders=args.compile_encoders, compile_policy=_compile_policy(args.compile_policy))
    settings = PoolSettings(
        jobs=args.jobs,
        timeout=args.timeout,
        max_memory=_memory_limit(args.max_memory, args.jobs),
        plugins=tuple(args.plugin),
        max_tasks_per_worker=max(0, args.max_tasks_per_worker),
        log_file=str(outdir / WORKER_LOG),
    )
    return options, settings, outdir


def _validated_device(args: argparse.Namespace, checks: tuple[str, ...]) -> tuple[str, str]:
    """--device and --backend, checked against the checks and this machine."""
    from auditor.checks import model_runners

    runs_models = model_runners(checks)
    device = args.device or ("cpu" if runs_models else "meta")
    if device == "meta" and runs_models:
        raise UsageError(f"check(s) {', '.join(runs_models)} run real models: pass --device cpu or --device cuda")
    if device == "cuda":
        from auditor.core.runinfo import cuda_problem

        problem = cuda_problem()
        if problem:
            raise UsageError(f"--device cuda: {problem}; use --device cpu (with --backend aot_eager) instead")
    backend = args.backend or ("inductor" if device == "cuda" else "aot_eager")
    if "compile" in checks:
        import torch._dynamo

        known = set(torch._dynamo.list_backends(exclude_tags=())) | {"eager", "aot_eager", "inductor"}
        if backend not in known:
            raise UsageError(f"unknown --backend {backend!r}; this torch has: {', '.join(sorted(known))}")
    return device, backend


def _compile_policy(name: str) -> str:
    from auditor.decorators.policies import CHECK_POLICIES

    if name not in CHECK_POLICIES:
        raise UsageError(f"--compile-policy {name!r}: the compile check uses the project's decorator; "
                         f"valid: {', '.join(CHECK_POLICIES)}")
    return name


def _check_requirements(checks: tuple[str, ...]) -> None:
    import importlib.util

    from auditor.checks import get

    for name in checks:
        missing = [module for module in get(name).requires if importlib.util.find_spec(module) is None]
        if missing:
            raise UsageError(f"check {name!r} needs {', '.join(missing)} installed "
                             f"(pip install 'model-sweep-auditor[{missing[0]}]')")


def _check_executor(args: argparse.Namespace, checks: tuple[str, ...]) -> None:
    import importlib.util

    if args.executor != "ray":
        if args.ray_address or args.gpus_per_task:
            raise UsageError("--ray-address and --gpus-per-task need --executor ray")
        return
    from auditor.checks import available, model_runners
    from auditor.remote.ray_trip import INSTALL_HINT

    if importlib.util.find_spec("ray") is None:
        raise UsageError(f"--executor ray needs Ray installed: {INSTALL_HINT}")
    for given, flag in ((args.max_memory.strip().lower() != "auto", "--max-memory"),
                        (args.max_tasks_per_worker, "--max-tasks-per-worker")):
        if given:
            raise UsageError(f"{flag} applies to the local pool only: Ray workers are Ray's to limit and replace "
                             "(a worker its memory monitor kills is `oom`); leave it out with --executor ray")
    if args.gpus_per_task < 0:
        raise UsageError("--gpus-per-task cannot be negative")
    if args.gpus_per_task and not model_runners(checks):
        raise UsageError(f"--gpus-per-task applies to the checks that run models "
                         f"({', '.join(model_runners(available()))}), "
                         "and --checks has none of them; the other checks ask for CPUs only")


def _executor(args: argparse.Namespace, settings, options):
    """The local pool, or Ray tasks; either way `run(cases)` yields one batch per model type."""
    if args.executor == "local":
        from auditor.engine.pool import WorkerPool

        return WorkerPool(settings, options)
    from auditor.engine.ray_executor import RayExecutor, RaySettings

    ray_settings = RaySettings(address=args.ray_address, jobs=settings.jobs, timeout=settings.timeout,
                               plugins=settings.plugins, gpus_per_task=args.gpus_per_task, online=args.online)
    return RayExecutor(ray_settings, options).connect()


def _refuse_paths(models: list[str]) -> None:
    """trust_remote_code is only for directories named with --remote-code: a path or Hub id in
    --models is refused rather than loaded."""
    for entry in models:
        if "/" in entry or os.sep in entry or Path(entry).is_dir():
            raise UsageError(f"--models takes model types, not paths or Hub ids: {entry!r}. To audit a local "
                             "remote-code model, name its directory with --remote-code; Hub ids are never loaded")


def _remote_cases(directories: list[str]):
    from auditor.remote.user import RemoteCodeError, remote_cases

    try:
        return remote_cases(directories)
    except RemoteCodeError as exc:
        raise UsageError(str(exc)) from None


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


def _shard_text(text: str | None) -> str:
    if not text:
        return ""
    from auditor.models.cases import parse_shard

    return "{}/{}".format(*parse_shard(text))


def _default_run_id() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")


def _resume_command(args: argparse.Namespace, options, outdir: Path) -> str:
    """The command that continues this sweep: its selection, and every option that changes what a
    cell means or the limits it ran under, spelled out (defaults too), so that pasting it resumes
    the identical experiment (a resume under other options is refused)."""
    words = ["auditor", "sweep", "--output", str(outdir), "--resume"]
    for flag, values in (("--models", args.models), ("--exclude", args.exclude), ("--plugin", args.plugin),
                         ("--remote-code", args.remote_code)):
        for value in values:
            words += [flag, value]
    words += ["--shard", args.shard] if args.shard else []
    words += ["--checks", args.checks, "--policies", args.policies]
    words += ["--device", options.device, "--backend", options.backend, "--compile-policy", options.compile_policy]
    words += ["--compile-encoders"] if options.compile_encoders else []
    words += ["--build-per-policy"] if not options.shared_policy_build else []
    words += ["--label", args.label] if args.label else []
    words += ["--online"] if args.online else []
    words += ["--jobs", str(args.jobs), "--timeout", f"{args.timeout:g}"]
    if args.executor == "ray":
        words += ["--executor", "ray"]
        words += ["--ray-address", args.ray_address] if args.ray_address else []
        words += ["--gpus-per-task", f"{args.gpus_per_task:g}"] if args.gpus_per_task else []
    else:
        words += ["--max-memory", args.max_memory]
        words += ["--max-tasks-per-worker", str(args.max_tasks_per_worker)] if args.max_tasks_per_worker else []
    return shlex.join(words)
