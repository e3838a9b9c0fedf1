"""`auditor.sweep(...)`: build every selected model type in worker processes, one row each.

What `auditor sweep` does, as a function: it checks everything it can before any work (an
`InputError` otherwise), runs the checks in the local pool or on Ray, writes each model type's
rows as one unit to results.jsonl as they come, then the tables, report.html and summary.md
(and the JUnit XML and Markdown files asked for), and returns a `SweepOutcome`. A sweep that
cannot go on raises `RunStopped`; Ctrl-C raises `RunInterrupted`; either way every finished row
is kept and the exception carries the command that resumes the run.

It prints nothing: what a person would want to see as it goes reaches `SweepEvents`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from auditor.core.errors import InputError, RunInterrupted, RunStopped
from auditor.core.results import (
    FORMAT_VERSION,
    RESULTS_FILE,
    TORN_SUFFIX,
    Result,
    ResultsFileError,
    ResultsWriter,
    Run,
    read_run,
    repair,
)

DEFAULT_TIMEOUT = 300.0
DEFAULT_CHECKS = ("build", "decorate", "pickle", "backend")
DEFAULT_POLICIES = ("legacy", "fixed", "fixed-no-config-skip")
WORKER_LOG = "workers.log"  # the workers' stdout and stderr, in the output directory
SUMMARY_FILE = "summary.md"


@dataclass(frozen=True)
class SweepRequest:
    """Everything that says what a sweep does; the arguments of `sweep()`. Lists that the CLI
    takes comma-separated (models, exclude, checks, policies) may be given either way."""

    output: Path | None = None  # the run directory (default: reports/RUN_ID)
    models: tuple[str, ...] = ()  # model types or regular expressions (default: all)
    exclude: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()  # modules or .py files imported first, in every worker too
    remote_code: tuple[str, ...] = ()  # local remote-code model directories (trust_remote_code=True)
    shard: str | None = None  # "I/N"
    checks: tuple[str, ...] = DEFAULT_CHECKS
    policies: tuple[str, ...] = DEFAULT_POLICIES
    device: str | None = None  # meta, cpu or cuda (default: meta, or cpu for checks that run models)
    backend: str | None = None  # torch.compile backend of the compile check
    compile_encoders: bool = False
    compile_policy: str = "fixed"
    build_per_policy: bool = False
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    timeout: float = DEFAULT_TIMEOUT
    max_memory: str = "auto"
    max_tasks_per_worker: int = 0
    online: bool = False
    executor: str = "local"  # local or ray
    ray_address: str | None = None
    gpus_per_task: float = 0.0
    reports: Path = Path("reports")
    run_id: str | None = None
    label: str = ""
    resume: bool = False
    overwrite: bool = False
    junit: Path | None = None  # also write the JUnit XML of the run here
    markdown: Path | None = None  # also write the Markdown summary here (summary.md is always written)
    command: str = ""  # what the header records as the command (default: the equivalent `auditor sweep`)


class SweepEvents:
    """What a sweep tells as it goes. The default tells nothing; the CLI prints. Subclass it and
    override what you want."""

    def note(self, text: str) -> None:
        """Something a person running the sweep should know (a repaired file, a cluster starting)."""

    def started(self, total: int) -> None:
        """The model types to run are known: `total` of them."""

    def finished_type(self, model_type: str, rows: list[Result]) -> None:
        """One model type's rows were written."""

    def ended(self) -> None:
        """The workers are done or stopped (called before the tables are written)."""


@dataclass(frozen=True)
class SweepOutcome:
    """A finished sweep: its run as written (every row, resumed ones too), where its files are,
    how much this call ran, and what the `fail_on` rules matched."""

    run: Run
    outdir: Path
    files: tuple[Path, ...]
    done: int  # model types this call ran
    total: int  # model types this call had to run (a resume skips the ones done before)
    seconds: float
    gate_hits: tuple = ()  # auditor.report.gate.GateHit, one per cell a fail_on rule matched

    @property
    def results_path(self) -> Path:
        return self.outdir / RESULTS_FILE

    @property
    def worker_log(self) -> Path | None:
        """workers.log when the workers wrote anything (transformers warnings, crash tracebacks)."""
        log = self.outdir / WORKER_LOG
        return log if log.exists() and log.stat().st_size else None


def sweep(output: str | os.PathLike | None = None, *, events: SweepEvents | None = None,
          fail_on: Iterable[str] = (), **options) -> SweepOutcome:
    """Run a sweep and write its files; see `SweepRequest` for the options.

    `fail_on` takes `--fail-on` rules (`refused`, `decorate/*/legacy=refused`); the cells they
    match are `SweepOutcome.gate_hits`. Raises InputError on bad input (before any work),
    RunStopped when the run could not go on, RunInterrupted on Ctrl-C."""
    from auditor.report.gate import parse_fail_on

    request = make_request(output=output, **options)
    rules = parse_fail_on(fail_on)
    return run_request(request, events or SweepEvents(), rules)


def make_request(**options) -> SweepRequest:
    """A SweepRequest from keyword options, comma-separated strings split and paths made Paths;
    an unknown option is an InputError."""
    names = {f.name for f in SweepRequest.__dataclass_fields__.values()}
    unknown = sorted(set(options) - names)
    if unknown:
        raise InputError(f"unknown sweep option(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    for name in ("models", "exclude", "checks", "policies", "plugins", "remote_code"):
        if name in options:
            options[name] = _listed(options[name], split=name not in ("plugins", "remote_code"))
    for name in ("output", "reports", "junit", "markdown"):
        if options.get(name) is not None:
            options[name] = Path(options[name])
    return SweepRequest(**options)


def run_request(request: SweepRequest, events: SweepEvents, rules: tuple = ()) -> SweepOutcome:
    options, settings, outdir = validate(request)
    if not request.online:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"

    from auditor.core.runinfo import probe
    from auditor.models import cases
    from auditor.remote.workspace import remove_orphaned_workdirs

    orphans = remove_orphaned_workdirs()
    if orphans:
        events.note(f"Removed {len(orphans)} scratch director{'y' if len(orphans) == 1 else 'ies'} left in "
                    f"{Path(orphans[0]).parent} by auditor processes that were killed.")
    try:
        cases.load_plugins(settings.plugins)
        known = cases.discover()
        selected = [] if request.remote_code and not request.models else cases.select(
            known, list(request.models), list(request.exclude))
        selected += _remote_cases(request.remote_code)
        if request.shard:
            selected = cases.shard(selected, *cases.parse_shard(request.shard))
    except cases.SelectionError as exc:
        raise InputError(str(exc)) from None
    events.note(f"Found {len(known)} model types; {len(selected)} selected.")

    info = probe(request.command or command_line(request, options, outdir), device=_header_device(options),
                 checks=options.checks, label=request.label, shard=_shard_text(request.shard),
                 experiment=_experiment(options, request))
    path = outdir / RESULTS_FILE
    resumed = request.resume and path.exists()
    already = _resume(path, info, events) if resumed else set()
    todo = [case for case in selected if case.model_type not in already]
    if not resumed:  # a new run (or --overwrite): a new log; --resume appends to the old one
        (outdir / WORKER_LOG).unlink(missing_ok=True)
    return _execute(todo, options, settings, path, info, request, events, rules, append=resumed)


def _experiment(options, request: SweepRequest) -> dict:
    """What the header records beyond RunInfo's own fields, so that a resume can be checked."""
    return {"policies": list(options.policies), "device": options.device, "backend": options.backend,
            "compile_policy": options.compile_policy, "compile_encoders": options.compile_encoders,
            "build_per_policy": not options.shared_policy_build, "plugins": list(options.plugins),
            "online": bool(request.online)}


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


def _resume(path: Path, info, events: SweepEvents) -> set[str]:
    """The model types a resumed run already has, after checking that this request continues the
    same experiment and repairing a torn tail. InputError before any work otherwise."""
    try:
        run = read_run(path)
    except ResultsFileError as exc:
        raise InputError(f"cannot resume: {exc}") from None
    if run.format_version != FORMAT_VERSION:
        raise InputError(f"cannot resume {path}: an older auditor wrote it (results format {run.format_version}, "
                         "without completion records); start a new run (another --output, or --overwrite)")
    conflicts = [f"{option} ({what}): the run has {_shown(get(run.info))}, this command {_shown(get(info))}"
                 for what, get, option in _SAME_EXPERIMENT if get(run.info) != get(info)]
    if conflicts:
        raise InputError(f"cannot resume {path}: this command is another experiment than the one it holds; "
                         "rows of both would mix in one file:\n  " + "\n  ".join(conflicts) +
                         "\nUse the resume command the interrupted sweep printed, or start a new run.")
    try:
        damage = repair(path)
    except OSError as exc:
        raise InputError(f"cannot repair {path} before resuming: {exc.strerror or exc}") from None
    if damage is not None:
        events.note(f"Repaired {path}: took out {damage.note()} (kept in {path.name}{TORN_SUFFIX}); "
                    "those model types run again.")
    already = run.done_model_types
    events.note(f"Resuming: {len(already)} model types already done.")
    return already


def _shown(value) -> str:
    return "(none)" if value in ("", None, []) else repr(value) if isinstance(value, str) else str(value)


def _header_device(options) -> str:
    from auditor.checks import model_runners
    from auditor.core.runinfo import describe_device

    return describe_device(options.device) if model_runners(options.checks) else "meta"


def _execute(todo, options, settings, path: Path, info, request: SweepRequest, events: SweepEvents,
             rules: tuple, *, append: bool) -> SweepOutcome:
    import time

    from auditor.executors.pool import PoolError

    start = time.monotonic()
    tables = _Tables(path.parent)
    with _ray_for_pickle(request, options, events) as options:
        try:
            executor = _executor(request, settings, options)
        except PoolError as exc:  # e.g. a Ray address that cannot be reached: before any row
            raise InputError(str(exc)) from None
        done, stopped = _drive(executor, todo, path, info, tables, request, events, append=append)
    run, files = None, ()
    try:
        run, files = tables.finish()
        files += tuple(_extra_files(run, request))
    except OSError as exc:
        stopped = stopped or f"cannot write the tables and report in {path.parent}: {exc.strerror or exc}"
    kept = dict(results_path=path, done=done, total=len(todo), run=run,
                resume_command=command_line(request, options, path.parent, resume=True))
    if stopped == _INTERRUPTED:
        raise RunInterrupted(f"interrupted: {done} of {len(todo)} model types finished", **kept)
    if stopped:
        raise RunStopped(stopped, **kept)
    from auditor.report.gate import gate_hits
    from auditor.report.matrix import build_matrix

    hits = gate_hits(build_matrix([run]), rules) if rules else ()
    return SweepOutcome(run=run, outdir=path.parent, files=files, done=done, total=len(todo),
                        seconds=time.monotonic() - start, gate_hits=hits)


def _extra_files(run: Run, request: SweepRequest) -> list[Path]:
    from auditor.report import write_junit, write_summary

    paths = []
    if request.junit is not None:
        paths.append(write_junit([run], request.junit))
    if request.markdown is not None:
        paths.append(write_summary([run], request.markdown))
    return paths


_INTERRUPTED = "interrupted"


def _drive(executor, todo, path: Path, info, tables: _Tables, request: SweepRequest,
           events: SweepEvents, *, append: bool) -> tuple[int, str]:
    """Run the sweep, writing each model type's rows as one unit as they come; how many model
    types finished, and why it stopped early: "" (it did not), _INTERRUPTED, or what failed."""
    from auditor.executors.pool import PoolError

    done = 0
    events.started(len(todo))
    try:
        writer = ResultsWriter(path, info, append=append)
    except OSError as exc:
        events.ended()
        return done, f"cannot write {path}: {exc.strerror or exc}"
    stopped = ""
    try:
        for batch in executor.run(todo):
            if batch:
                writer.write_type(batch[0].model_type, batch)
                done += 1
                events.finished_type(batch[0].model_type, batch)
            tables.rows_written(last=done == len(todo))
    except KeyboardInterrupt:
        stopped = _INTERRUPTED
    except PoolError as exc:
        stopped = f"the {'worker pool' if request.executor == 'local' else 'Ray executor'} failed: {exc}"
    except OSError as exc:  # a full disk, a file size limit: the unit being written is a torn tail
        stopped = f"cannot write {path}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            writer.close()
        events.ended()
    return done, stopped


class _Tables:
    """results.csv, matrix.csv, report.html and summary.md, from everything in results.jsonl.

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

    def finish(self) -> tuple[Run, tuple[Path, ...]]:
        """Wait for (or make) the tables; the run they were made of and the files written."""
        if self._future is not None:
            self._thread.shutdown()  # waits for it
            if not self._stale:
                return self._future.result()  # raises what writing them raised
        return _write_tables(self.outdir)


@contextlib.contextmanager
def _ray_for_pickle(request: SweepRequest, options, events: SweepEvents):
    """The options, with the one local Ray cluster that the pool's workers share for the pickle
    check's Ray round trip (rather than a cluster per worker). It starts while the workers
    start; a cluster that does not start is reported in every Ray row, and the other checks go
    on. Under --executor ray the tasks use the sweep's own cluster; without Ray installed the
    column is skipped."""
    from auditor.remote.ray_trip import LocalCluster, ray_missing

    if "pickle" not in options.checks or request.executor != "local" or ray_missing():
        yield options
        return
    events.note("Starting a local Ray cluster for the pickle check's Ray round trip...")
    cluster = LocalCluster(cpus=request.jobs)
    try:
        yield replace(options, ray_cluster=cluster.start())
    finally:
        cluster.close()


def _write_tables(outdir: Path) -> tuple[Run, tuple[Path, ...]]:
    """results.csv, matrix.csv, report.html and summary.md from everything in results.jsonl."""
    from auditor.report import write_report

    run = read_run(outdir)
    return run, tuple(write_report([run], outdir))


def validate(request: SweepRequest):
    """Everything that can be wrong with a request, found before any work starts: the checks'
    Options, the pool's settings and the run directory; InputError otherwise."""
    from auditor.checks import Options, available
    from auditor.executors.pool import PoolSettings

    _check_transformers()
    checks = tuple(_listed(request.checks))
    unknown = [c for c in checks if c not in available()]
    if unknown or not checks:
        raise InputError(f"unknown check(s) {', '.join(unknown) or '(none given)'}; available: {', '.join(available())}")
    _check_requirements(checks)
    _check_executor(request, checks)
    if request.jobs < 1:
        raise InputError("--jobs must be at least 1")
    if request.timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    if request.resume and request.overwrite:
        raise InputError("--resume and --overwrite contradict each other")
    outdir = request.output or request.reports / (request.run_id or _default_run_id())
    _check_writable(outdir)
    if (outdir / RESULTS_FILE).exists() and not (request.resume or request.overwrite):
        raise InputError(f"{outdir / RESULTS_FILE} exists; pass --resume to continue it or --overwrite to replace it")
    for path, flag in ((request.junit, "--junit"), (request.markdown, "--markdown")):
        if path is not None:
            _check_writable(path.parent, f"{flag} {path}")
    _refuse_paths(request.models)
    _remote_cases(request.remote_code)
    device, backend = validated_device(request.device, request.backend, checks)
    options = Options(policies=_validated_policies(request.policies), checks=checks, plugins=request.plugins,
                      shared_policy_build=not request.build_per_policy, device=device, backend=backend,
                      compile_encoders=request.compile_encoders,
                      compile_policy=_compile_policy(request.compile_policy))
    settings = PoolSettings(
        jobs=request.jobs,
        timeout=request.timeout,
        max_memory=_memory_limit(request.max_memory, request.jobs),
        plugins=request.plugins,
        max_tasks_per_worker=max(0, request.max_tasks_per_worker),
        log_file=str(outdir / WORKER_LOG),
    )
    return options, settings, outdir


def _check_transformers() -> None:
    """The installed transformers must be in the range the project declares (pyproject.toml's
    dependency, read from the installed metadata: one place for it), the range that is tested;
    an older one is refused rather than swept into cells that blame the models."""
    import importlib.metadata

    from packaging.requirements import Requirement

    from auditor.core.hints import install_command

    try:
        declared = next(Requirement(r) for r in importlib.metadata.requires("model-sweep-auditor") or ()
                        if Requirement(r).name == "transformers")
        installed = importlib.metadata.version("transformers")
    except (importlib.metadata.PackageNotFoundError, StopIteration):
        return  # run from a source tree that is not installed: nothing declared to hold it to
    if not declared.specifier.contains(installed, prereleases=True):
        raise InputError(f"transformers {installed} is outside the range this auditor supports and tests "
                         f"({declared.specifier}); install a supported transformers "
                         f"({install_command(str(declared))}), or an older model-sweep-auditor")


def validated_device(device: str | None, backend: str | None, checks: Sequence[str]) -> tuple[str, str]:
    """The device and compile backend of a sweep, checked against the checks and this machine."""
    from auditor.checks import model_runners

    runs_models = model_runners(checks)
    if device not in (None, "meta", "cpu", "cuda"):
        raise InputError(f"--device {device!r}: one of meta, cpu, cuda")
    device = device or ("cpu" if runs_models else "meta")
    if device == "meta" and runs_models:
        raise InputError(f"check(s) {', '.join(runs_models)} run real models: pass --device cpu or --device cuda")
    if device == "cuda":
        from auditor.core.runinfo import cuda_problem

        problem = cuda_problem()
        if problem:
            raise InputError(f"--device cuda: {problem}; use --device cpu (with --backend aot_eager) instead")
    backend = backend or ("inductor" if device == "cuda" else "aot_eager")
    if "compile" in checks:
        import torch._dynamo

        known = set(torch._dynamo.list_backends(exclude_tags=())) | {"eager", "aot_eager", "inductor"}
        if backend not in known:
            raise InputError(f"unknown --backend {backend!r}; this torch has: {', '.join(sorted(known))}")
    return device, backend


def _compile_policy(name: str) -> str:
    from auditor.decorators.policies import CHECK_POLICIES

    if name not in CHECK_POLICIES:
        raise InputError(f"--compile-policy {name!r}: the compile check uses the project's decorator; "
                         f"valid: {', '.join(CHECK_POLICIES)}")
    return name


def _check_requirements(checks: tuple[str, ...]) -> None:
    import importlib.util

    from auditor.checks import get
    from auditor.core.hints import install_hint

    for name in checks:
        missing = [module for module in get(name).requires if importlib.util.find_spec(module) is None]
        if missing:
            raise InputError(f"check {name!r} needs {', '.join(missing)} installed ({install_hint(missing[0])})")


def _check_executor(request: SweepRequest, checks: tuple[str, ...]) -> None:
    import importlib.util

    if request.executor not in ("local", "ray"):
        raise InputError(f"--executor {request.executor!r}: local or ray")
    if request.executor != "ray":
        if request.ray_address or request.gpus_per_task:
            raise InputError("--ray-address and --gpus-per-task need --executor ray")
        return
    from auditor.checks import available, model_runners
    from auditor.core.hints import install_hint

    if importlib.util.find_spec("ray") is None:
        raise InputError(f"--executor ray needs Ray installed: {install_hint('ray')}")
    for given, flag in ((str(request.max_memory).strip().lower() != "auto", "--max-memory"),
                        (request.max_tasks_per_worker, "--max-tasks-per-worker")):
        if given:
            raise InputError(f"{flag} applies to the local pool only: Ray workers are Ray's to limit and replace "
                             "(a worker its memory monitor kills is `oom`); leave it out with --executor ray")
    if request.gpus_per_task < 0:
        raise InputError("--gpus-per-task cannot be negative")
    if request.gpus_per_task and not model_runners(checks):
        raise InputError(f"--gpus-per-task applies to the checks that run models "
                         f"({', '.join(model_runners(available()))}), "
                         "and --checks has none of them; the other checks ask for CPUs only")


def _executor(request: SweepRequest, settings, options):
    """The local pool, or Ray tasks; either way `run(cases)` yields one batch per model type."""
    if request.executor == "local":
        from auditor.executors.pool import WorkerPool

        return WorkerPool(settings, options)
    from auditor.executors.ray_executor import RayExecutor, RaySettings

    ray_settings = RaySettings(address=request.ray_address, jobs=settings.jobs, timeout=settings.timeout,
                               plugins=settings.plugins, gpus_per_task=request.gpus_per_task, online=request.online)
    return RayExecutor(ray_settings, options).connect()


def _refuse_paths(models: Sequence[str]) -> None:
    """trust_remote_code is only for directories named with --remote-code: a path or Hub id in
    --models is refused rather than loaded."""
    for entry in models:
        if "/" in entry or os.sep in entry or Path(entry).is_dir():
            raise InputError(f"--models takes model types, not paths or Hub ids: {entry!r}. To audit a local "
                             "remote-code model, name its directory with --remote-code; Hub ids are never loaded")


def _remote_cases(directories: Sequence[str]):
    from auditor.remote.user import RemoteCodeError, remote_cases

    try:
        return remote_cases(list(directories))
    except RemoteCodeError as exc:
        raise InputError(str(exc)) from None


def _validated_policies(names: Sequence[str]) -> tuple[str, ...]:
    from auditor import engines  # registers the engines' policies (vllm)
    from auditor.decorators import get_policy

    policies = tuple(dict.fromkeys(_listed(names)))
    if not policies:
        raise InputError("--policies is empty")
    for name in policies:
        engine = engines.by_policy(name)
        if engine is not None and not engine.installed:
            raise InputError(f"policy {name!r} needs {engine.title} installed: {engine.install_hint}")
        try:
            get_policy(name)
        except (ValueError, ImportError) as exc:
            raise InputError(f"policy {name!r}: {exc}") from None
    return policies


def _check_writable(directory: Path, what: str = "") -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"cannot write to {what or 'output directory'} ({directory}): "
                         f"{exc.strerror or exc}") from None


_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _memory_limit(text: str, jobs: int) -> int | None:
    value = str(text).strip().lower()
    if value in ("none", "0", "off"):
        return None
    if value == "auto":
        import psutil

        return int(psutil.virtual_memory().total * 0.8 / jobs)
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", value)
    if not match:
        raise InputError(f"--max-memory {text!r} is not a size such as 4G, 512M or 'none'")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _listed(values, *, split: bool = True) -> tuple[str, ...]:
    """A tuple of names from a string or an iterable of strings, comma-separated ones split."""
    if isinstance(values, (str, os.PathLike)):
        values = [values]
    items = [str(v) for v in values or ()]
    if split:
        items = [item.strip() for value in items for item in value.split(",")]
    return tuple(item for item in items if item)


def _shard_text(text: str | None) -> str:
    if not text:
        return ""
    from auditor.models.cases import parse_shard

    try:
        return "{}/{}".format(*parse_shard(text))
    except Exception as exc:  # SelectionError and the like: the shard is bad input
        raise InputError(str(exc)) from None


def _default_run_id() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")


def command_line(request: SweepRequest, options, outdir: Path, *, resume: bool = False) -> str:
    """The `auditor sweep` command of this request: its selection, and every option that changes
    what a cell means or the limits it ran under, spelled out (defaults too), so that pasting it
    (with --resume) continues the identical experiment (a resume under other options is refused)."""
    words = ["auditor", "sweep", "--output", str(outdir)] + (["--resume"] if resume else [])
    for flag, values in (("--models", request.models), ("--exclude", request.exclude),
                         ("--plugin", request.plugins), ("--remote-code", request.remote_code)):
        for value in values:
            words += [flag, value]
    words += ["--shard", request.shard] if request.shard else []
    words += ["--checks", ",".join(request.checks), "--policies", ",".join(request.policies)]
    words += ["--device", options.device, "--backend", options.backend, "--compile-policy", options.compile_policy]
    words += ["--compile-encoders"] if options.compile_encoders else []
    words += ["--build-per-policy"] if not options.shared_policy_build else []
    words += ["--label", request.label] if request.label else []
    words += ["--online"] if request.online else []
    words += ["--jobs", str(request.jobs), "--timeout", f"{request.timeout:g}"]
    if request.executor == "ray":
        words += ["--executor", "ray"]
        words += ["--ray-address", request.ray_address] if request.ray_address else []
        words += ["--gpus-per-task", f"{request.gpus_per_task:g}"] if request.gpus_per_task else []
    else:
        words += ["--max-memory", str(request.max_memory)]
        words += ["--max-tasks-per-worker", str(request.max_tasks_per_worker)] if request.max_tasks_per_worker else []
    return shlex.join(words)
