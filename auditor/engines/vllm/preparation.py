"""What vLLM's own code makes once per process, made before a worker's first model type
(`warm_up`, the engine's `Engine.warm_up`), and the registry inspection this machine can make
fail (`inspection_retried`). Needs vLLM; nothing here imports it at import time.

A worker's first cell used to pay for all of it: vLLM's import (seconds), the one-process gloo
group its layers ask for, and the registry's model-info cache (`fill_model_info_cache`, a
subprocess that imports vLLM again: 12-30 s here). On a loaded machine that was llama's `serves`
cell ending `timeout: no result after 300 s` while it takes seconds alone. Made before the
worker says it is ready, none of it is charged to a cell's --timeout; a cell still makes what
it needs where the warm-up could not (the calls are idempotent), and its row reports the failure.

vLLM's registry inspects a class missing from its cache in a subprocess of its own
(model_executor/models/registry.py:1160-1191, `_run_in_subprocess` 1694-1722: "to avoid
initializing CUDA"), and `_try_inspect_model_cls` (1213-1223) turns any failure there into None,
which ModelConfig reports as "Model architectures [...] failed to be inspected". Such a
subprocess fails for reasons of the machine (memory, a process limit, a loaded machine), not of
the class; on a CPU there is no CUDA to protect, so the inspection is made again in-process, by
vLLM's own `_ModelInfo.from_model_cls(model.load_model_cls())` (registry.py:1180-1182). Only
what fails in-process too is the registry's answer; a row whose inspection was retried says so
(extras `inspected_in_process`).
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator

_MADE: set[str] = set()  # what this process has made: "process group", "model-info cache"
# (module, class) -> the _ModelInfo in-process inspection gave (None: it failed there too)
_INSPECTED: dict[tuple[str, str], object] = {}


def warm_up() -> None:
    """vLLM imported as get_model imports it, its process group made and its registry's
    model-info cache filled: the engine's warm-up, made once per worker before its first cell.
    Raises what vLLM raised (the worker leaves it for the first row that needs the step)."""
    from auditor.engines.vllm.shims import target_device

    target_device()  # before vLLM's platform is first read
    import vllm.config  # noqa: F401
    import vllm.model_executor.model_loader  # noqa: F401  (get_model's import chain: seconds)

    process_group()
    model_info_cache()


def process_group() -> None:
    """The one-process gloo group vLLM's layers ask for, made once per process
    (`init_distributed_environment`, `initialize_model_parallel(1, 1)`)."""
    if "process group" in _MADE:
        return
    from auditor.engines.vllm.shims import target_device

    target_device()  # before vLLM's platform is first read
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel, parallel_state

    from auditor.engines.vllm.shims import config_shims

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with config_shims():
        base = VllmConfig()
    _worker_module(base)
    if parallel_state.model_parallel_is_initialized():  # an engine run's groups, left behind (running.py)
        parallel_state.destroy_model_parallel()
        parallel_state.destroy_distributed_environment()
    with set_current_vllm_config(base):
        init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                     distributed_init_method=f"tcp://127.0.0.1:{port}", backend="gloo")
        initialize_model_parallel(1, 1)
    _MADE.add("process group")


def _worker_module(config) -> None:
    """The module of the worker class vLLM's platform picks (`parallel_config.worker_cls`), imported
    as vLLM's worker process imports it before it builds a model: on a CPU-only host its CPU
    worker makes torch.accelerator's empty_cache and synchronize no-ops at import
    (v1/worker/cpu/shm.py in 0.32.0), which the model loader then calls (base_loader.py:93).
    Best effort: a worker module this build cannot import is left to the steps that need it."""
    import importlib

    worker = getattr(config.parallel_config, "worker_cls", "auto")
    if "." in worker and "cpu" in worker:
        with contextlib.suppress(Exception):
            importlib.import_module(worker.rsplit(".", 1)[0])


def process_group_gone() -> None:
    """The process group is made again when next asked for: an engine run in this process
    (running.py: vLLM's LLM) made its own and destroyed it, with ours, when it shut down."""
    import torch.distributed

    if not torch.distributed.is_initialized():
        _MADE.discard("process group")


def model_info_cache() -> None:
    """vLLM's own `ModelRegistry.fill_model_info_cache` (0.34.0 and later), once per process: a
    registry cache miss inspects the class in a subprocess of its own (about 12 s here), which
    this does for every native class in one (registry.py:1236-1253), kept in vLLM's cache
    directory for later runs. Best effort, as in vLLM."""
    if "model-info cache" in _MADE:
        return
    _MADE.add("model-info cache")
    from vllm.model_executor.models.registry import ModelRegistry

    fill = getattr(ModelRegistry, "fill_model_info_cache", None)
    if fill is not None:
        fill()


@contextlib.contextmanager
def inspection_retried() -> Iterator[list[str]]:
    """For the block, vLLM's registry retries in-process an inspection its subprocess failed
    (see the module's docstring); yields the list the architectures so retried are added to
    (what the row says). vLLM's `_try_inspect_model_cls` is put back after."""
    registry = sys.modules.get("vllm.model_executor.models.registry")
    if registry is None:
        import vllm.model_executor.models.registry as registry
    original = registry._try_inspect_model_cls
    retried: list[str] = []

    def inspect(model_arch, model):
        info = original(model_arch, model)
        if info is not None or not isinstance(model, registry._LazyRegisteredModel):
            return info
        key = (model.module_name, model.class_name)
        if key not in _INSPECTED:
            _INSPECTED[key] = _in_process(registry, model)
        if _INSPECTED[key] is not None and model_arch not in retried:
            retried.append(model_arch)
        return _INSPECTED[key]

    registry._try_inspect_model_cls = inspect
    try:
        yield retried
    finally:
        registry._try_inspect_model_cls = original


def _in_process(registry, model):
    """vLLM's inspection of a lazily registered class (registry.py:1180-1182), in this process;
    None where it fails here too (as `_try_inspect_model_cls` returns, logged as vLLM logs it)."""
    try:
        return registry._ModelInfo.from_model_cls(model.load_model_cls())
    except Exception:
        registry.logger.exception("Error in inspecting model class %s.%s in-process", model.module_name,
                                  model.class_name)
        return None
