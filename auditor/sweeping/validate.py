"""Everything that can be wrong with a sweep request, found before any work starts.

`validate(request)` is the first step of a sweep: it resolves the checks once, fills in the
defaults that depend on them (device, backend), and returns the SweepPlan every later step reads;
an InputError otherwise, with the message the CLI prints.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.hints import install_command, install_hint
from auditor.core.results import RESULTS_FILE, Run, check_run_id, read_run
from auditor.sweeping.options import BY_NAME, OPTIONS, SweepRequest, listed
from auditor.sweeping.plan import SweepPlan

WORKER_LOG = "workers.log"  # the workers' stdout and stderr, in the output directory
TORCH_BACKENDS = frozenset({"eager", "aot_eager", "inductor"})  # torch.compile's own, always there


def validate(request: SweepRequest) -> SweepPlan:
    """The plan of a request: its checks resolved, its options and the pool's settings made, its
    run directory writable; InputError otherwise."""
    from auditor.checks import Options
    from auditor.executors.pool import PoolSettings

    _check_transformers()
    checks = _resolved_checks(listed(request.checks))
    names = tuple(check.name for check in checks)
    runners = [check.name for check in checks if check.runs_models]
    _check_executor(request, runners)
    _check_limits(request)
    run_id = (check_run_id(request.run_id, BY_NAME["run_id"].flag) if request.run_id is not None
              else _default_run_id())
    outdir = request.output or request.reports / run_id
    _check_outputs(request, outdir)
    _refuse_paths(request.models, {case.model_type for case in checkpoint_cases(request.checkpoints)})
    remote_cases(request.remote_code)
    _check_weights(request, names)
    # The cheap checks before the device's: torch is imported only for a backend it must name.
    request = replace(request, checks=names, policies=_validated_policies(request.policies),
                      compile_policy=_compile_policy(request.compile_policy),
                      compile_semantics=_compile_semantics(request.compile_semantics))
    device, backend = _device(request.device, request.backend, runners, "compile" in names)
    dtype = request.dtype or ("auto" if device == "cuda" else "float32")
    request = replace(request, device=device, backend=backend, dtype=dtype)
    options = Options(policies=request.policies, checks=names, plugins=request.plugins,
                      shared_policy_build=not request.build_per_policy, device=device, backend=backend, dtype=dtype,
                      compile_encoders=request.compile_encoders, compile_policy=request.compile_policy,
                      compile_semantics=request.compile_semantics, compile_ungated=request.compile_ungated,
                      weights_save=str(request.weights_save or ""), weights_from=str(request.weights_from or ""))
    settings = PoolSettings(
        jobs=request.jobs,
        timeout=request.timeout,
        max_memory=_memory_limit(request.max_memory, request.jobs),
        alone_memory=_memory_limit(request.max_memory, 1),
        plugins=request.plugins,
        max_tasks_per_worker=max(0, request.max_tasks_per_worker),
        log_file=str(outdir / WORKER_LOG),
    )
    return SweepPlan(request=request, checks=checks, options=options, settings=settings, outdir=outdir,
                     against=_against(request.against))


def _resolved_checks(names: Sequence[str]) -> tuple:
    """The check objects of `names`, each looked up once; unknown ones and missing requirements
    are InputErrors."""
    import importlib.util

    from auditor.checks import get

    check_names(names)
    checks = tuple(get(name) for name in names)
    for check in checks:
        missing = [module for module in check.requires if importlib.util.find_spec(module) is None]
        if missing:
            raise InputError(f"check {check.name!r} needs {', '.join(missing)} installed ({install_hint(missing[0])})"
                             + _engine_venvs(check.name))
    return checks


def _engine_venvs(check: str) -> str:
    """How an engine's venv can answer `check` instead (`--engine NAME==VERSION`), where one can."""
    from auditor import engines

    if check != "serves":
        return ""
    answering = [engines.example_requirement(e.name) for e in engines.all() if e.serves is not None]
    return f", or let an engine's own venv answer it: --engine {' or --engine '.join(answering)}" if answering else ""


# -- the rules of the options that every command passing them on to a sweep (upgrade-check,
# bisect, versions, the atlas) checks before any venv is touched: here, once, the sweep's own ---

def check_names(names: Sequence[str] | str, source: str = "") -> None:
    """An InputError unless `names` (a list, or comma-separated) names known checks, at least one;
    `source` says where the names came from when not from --checks."""
    from auditor.checks import available

    known = available()
    names = listed(names)
    unknown = [c for c in names if c not in known]
    if unknown or not names:
        where = f" (from {source})" if source else ""
        raise InputError(f"unknown check(s) {', '.join(unknown) or '(none given)'}{where}; "
                         f"available: {', '.join(known)}")


def check_limits(*, jobs: int | None = None, timeout: float | None = None, reruns: int | None = None,
                 resume: bool = False, overwrite: bool = False) -> None:
    """The limits of a sweep (None: not given, the sweep's default)."""
    if jobs is not None and jobs < 1:
        raise InputError("--jobs must be at least 1")
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    if reruns is not None and reruns < 0:
        raise InputError("--reruns must be 0 (no reruns) or more")
    if resume and overwrite:
        raise InputError("--resume and --overwrite contradict each other")


def check_selection(models: Sequence[str], exclude: Sequence[str]) -> None:
    """An InputError for a --models or --exclude given a value that names nothing (the rule of
    every list option, options.given_names)."""
    from auditor.sweeping.options import given_names

    given_names(BY_NAME["models"], models)
    given_names(BY_NAME["exclude"], exclude)


def refuse_ray_options(executor: str | None, values: Mapping[str, object]) -> None:
    """The Ray executor's options (declared by `Option.executor`) refused without --executor ray;
    `values`: the options given, by name (a request's, or those a command passes on)."""
    if (executor or "local") == "ray":
        return
    ray_only = [option for option in OPTIONS if option.executor == "ray" and option.name in values]
    if any(_given(option, values[option.name]) for option in ray_only):
        flags = " and ".join(option.flag for option in ray_only)
        raise InputError(f"{flags} {'needs' if len(ray_only) == 1 else 'need'} --executor ray")


def refuse_results(outdir: Path, *, resume: bool, overwrite: bool) -> None:
    """An InputError where `outdir` holds results and neither --resume nor --overwrite says what to do."""
    if (outdir / RESULTS_FILE).exists() and not (resume or overwrite):
        raise InputError(f"{outdir / RESULTS_FILE} exists; pass --resume to continue it or --overwrite to replace it")


def _check_limits(request: SweepRequest) -> None:
    check_limits(jobs=request.jobs, timeout=request.timeout, reruns=request.reruns, resume=request.resume,
                 overwrite=request.overwrite)


def _check_outputs(request: SweepRequest, outdir: Path) -> None:
    _check_writable(outdir)
    refuse_results(outdir, resume=request.resume, overwrite=request.overwrite)
    for option in (BY_NAME["junit"], BY_NAME["markdown"]):
        path = getattr(request, option.name)
        if path is not None:
            _check_writable(path.parent, f"{option.flag} {path}")


def _against(path: Path | None) -> Run | None:
    """The run of --against, read now: one that cannot be read refuses the sweep before any work."""
    if path is None:
        return None
    try:
        return read_run(path)
    except InputError as exc:
        raise InputError(f"{BY_NAME['against'].flag} {path}: {exc}") from None


def _check_transformers() -> None:
    """The installed transformers must be in the range the project declares (pyproject.toml's
    dependency, read from the installed metadata: one place for it), the range that is tested;
    an older one is refused rather than swept into cells that blame the models."""
    import importlib.metadata

    from packaging.requirements import Requirement

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

    return _device(device, backend, model_runners(checks), "compile" in checks)


def _device(device: str | None, backend: str | None, runners: Sequence[str], compiles: bool) -> tuple[str, str]:
    if device not in (None, "meta", "cpu", "cuda"):
        raise InputError(f"--device {device!r}: one of meta, cpu, cuda")
    device = device or ("cpu" if runners else "meta")
    if device == "meta" and runners:
        raise InputError(f"check(s) {', '.join(runners)} run real models: pass --device cpu or --device cuda")
    if device == "cuda":
        from auditor.core.runinfo import cuda_problem

        problem = cuda_problem()
        if problem:
            raise InputError(f"--device cuda: {problem}; use --device cpu (with --backend aot_eager) instead")
    backend = backend or ("inductor" if device == "cuda" else "aot_eager")
    if compiles and backend not in TORCH_BACKENDS:  # another name: importing dynamo (seconds) tells
        import torch._dynamo

        known = set(torch._dynamo.list_backends(exclude_tags=())) | TORCH_BACKENDS
        if backend not in known:
            raise InputError(f"unknown --backend {backend!r}; this torch has: {', '.join(sorted(known))}")
    return device, backend


def _compile_semantics(name: str) -> str:
    from auditor import engines

    if name not in engines.semantics_names():
        raise InputError(f"--compile-semantics {name!r}: valid: {', '.join(engines.semantics_names())}")
    return name


def _compile_policy(name: str) -> str:
    from auditor.engines.decorating import CHECK_POLICIES

    if name not in CHECK_POLICIES:
        raise InputError(f"--compile-policy {name!r}: the compile check uses the project's decorator; "
                         f"valid: {', '.join(CHECK_POLICIES)}")
    return name


def _check_executor(request: SweepRequest, runners: Sequence[str]) -> None:
    """The options of one executor are refused under the other (declared by `Option.executor`)."""
    import importlib.util

    if request.executor not in ("local", "ray"):
        raise InputError(f"--executor {request.executor!r}: local or ray")
    other = [option for option in OPTIONS if option.executor not in ("", request.executor)]
    if request.executor != "ray":
        refuse_ray_options(request.executor, {option.name: getattr(request, option.name) for option in other})
        return
    from auditor.checks import available, model_runners
    if importlib.util.find_spec("ray") is None:
        raise InputError(f"--executor ray needs Ray installed: {install_hint('ray')}")
    for option in other:
        if _given(option, getattr(request, option.name)):
            raise InputError(f"{option.flag} applies to the local pool only: Ray workers are Ray's to limit and "
                             "replace (a worker its memory monitor kills is `oom`); leave it out with --executor ray")
    if request.gpus_per_task < 0:
        raise InputError("--gpus-per-task cannot be negative")
    if request.gpus_per_task and not runners:
        raise InputError(f"--gpus-per-task applies to the checks that run models "
                         f"({', '.join(model_runners(available()))}), "
                         "and --checks has none of them; the other checks ask for CPUs only")


def _given(option, value) -> bool:
    """Whether an option was set away from its default ("AUTO " is --max-memory's default too)."""
    if isinstance(value, str) and isinstance(option.default, str):
        return value.strip().lower() != option.default
    return bool(value) and value != option.default


def _refuse_paths(models: Sequence[str], checkpoints: set[str] = frozenset()) -> None:
    """trust_remote_code is only for directories named with --remote-code: a path or Hub id in
    --models is refused rather than loaded (the row name of a --checkpoint given, ORG/NAME@REV, is
    not one)."""
    for entry in models:
        if entry in checkpoints:
            continue
        if "/" in entry or os.sep in entry or Path(entry).is_dir():
            raise InputError(f"--models takes model types, not paths or Hub ids: {entry!r}. To audit a local "
                             "remote-code model, name its directory with --remote-code; Hub ids are never loaded")


def remote_cases(directories: Sequence[str]):
    """The cases of --remote-code directories; InputError for one that is not remote code."""
    from auditor.remote.user import RemoteCodeError
    from auditor.remote.user import remote_cases as cases_of

    try:
        return cases_of(list(directories))
    except RemoteCodeError as exc:
        raise InputError(str(exc)) from None


def checkpoint_cases(directories: Sequence[str]):
    """The cases of --checkpoint folders (every snapshot of a cache folder its own); InputError
    for a folder that is none, before any work."""
    from auditor.models.cases import ModelCase
    from auditor.models.checkpoints import CheckpointError, find_checkpoints

    cases = []
    try:
        for directory in directories:
            cases += [ModelCase(found.name, source="checkpoint", checkpoint=str(found.path))
                      for found in find_checkpoints(directory)]
    except CheckpointError as exc:
        raise InputError(f"{BY_NAME['checkpoints'].flag} {exc}") from None
    names = [case.model_type for case in cases]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(f"{BY_NAME['checkpoints'].flag} names {', '.join(twice)} twice (two folders of one "
                         "name: rename one)")
    return cases


def saved_types(weights_from: Path | None) -> list[str]:
    """The model types another run saved for the checks across releases in --weights-from (a
    checkpoint, a tokenizer)."""
    from auditor.checks.tokenizer import RECORD
    from auditor.checks.weights import REFERENCE_INFO

    if weights_from is None:
        return []
    folder = Path(weights_from)
    return sorted({path.parent.name for path in folder.glob(f"*/{REFERENCE_INFO}")}
                  | {path.parent.parent.name for path in folder.glob(f"*/*/{RECORD}")})


def _check_weights(request: SweepRequest, checks: Sequence[str]) -> None:
    from auditor.checks import across_releases

    save, load = BY_NAME["weights_save"].flag, BY_NAME["weights_from"].flag
    if (request.weights_save or request.weights_from) and not across_releases(checks):
        raise InputError(f"{save} and {load} are the weights and tokenizer checks': add one to "
                         f"{BY_NAME['checks'].flag}")
    if request.weights_save and request.weights_from:
        raise InputError(f"{save} and {load} contradict each other: a run either saves the checkpoints or "
                         "compares with those another run saved")
    if request.weights_from is not None and not Path(request.weights_from).is_dir():
        raise InputError(f"{load} {request.weights_from}: no such folder")
    if request.weights_save is not None:
        _check_writable(Path(request.weights_save), save)


def _validated_policies(names: Sequence[str]) -> tuple[str, ...]:
    from auditor import engines  # registers the engines' policies (vllm)
    from auditor.engines.decorating import validate_policy

    policies = tuple(dict.fromkeys(listed(names)))
    if not policies:
        raise InputError("--policies is empty")
    for name in policies:
        engine = engines.by_policy(name)
        if engine is not None and not engine.installed:
            raise InputError(f"policy {name!r} needs {engine.title} installed: {engine.install_hint}")
        if name in engines.gate_policies():
            continue  # an engine's own gate functions (`sglang`), not a decorator
        try:
            validate_policy(name)
        except (ValueError, ImportError) as exc:
            raise InputError(f"policy {name!r}: {exc}") from None
    return policies


def _check_writable(directory: Path, what: str = "") -> None:
    try:
        make_writable(directory)
    except OSError as exc:
        raise InputError(f"cannot write to {what or 'output directory'} ({directory}): "
                         f"{exc.strerror or exc}") from None


def make_writable(directory: Path) -> None:
    """`directory` made, and a file written in it and removed: an OSError where it cannot be."""
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / ".write-test"
    probe.write_text("")
    probe.unlink()


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


def shard_text(text: str | None) -> str:
    """A --shard as the header records it ("I/N"); InputError for a bad one."""
    if not text:
        return ""
    from auditor.models.cases import parse_shard

    try:
        return "{}/{}".format(*parse_shard(text))
    except Exception as exc:  # SelectionError and the like: the shard is bad input
        raise InputError(str(exc)) from None


def _default_run_id() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
