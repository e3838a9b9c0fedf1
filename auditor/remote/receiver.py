"""The far side of pickling: a process that plays another node.

Started with multiprocessing's `spawn` context, as serving engines start theirs, it has a
modules cache of its own (empty), none of the parent's modules caches on `sys.path`, and
never sees a twin directory: all it knows of a remote-code config is what the pickle holds.
A worker has one receiver for all its model types (per type that costs a pickle and a pipe
message, not an interpreter start); it is started on first use, started again if it died,
and ends with the worker (it is a daemon of the worker, in the worker's process group).

Protocol, over its own pipe: the receiver sends `("ready", pid)` once, then answers each
`(op, payload, kwargs)` with `("ok", dict)` or `("raised", {"status", "message", "signature"})`.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import pickle
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from auditor.core import heap
from auditor.core.classifier import classify
from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status, StatusError
from auditor.remote.workspace import child_environment, scratch

MESSAGE_TIMEOUT = 120.0  # seconds for one answer; then the receiver is killed
START_TIMEOUT = 300.0  # seconds to import torch and transformers on a busy machine


class FarSideError(StatusError):
    """What went wrong on the far side, or with the far side itself, as a row would say it."""

    def __init__(self, status: Status, message: str, signature: str = "", fault: str = "", extras=None) -> None:
        super().__init__(Failure(status, message, signature or signature_of(message), Fault(fault) if fault else None,
                                 dict(extras or {})))


class Receiver:
    """The parent's handle on its far-side process."""

    def __init__(self, plugins: Sequence[str] = (), timeout: float = MESSAGE_TIMEOUT) -> None:
        self.plugins = tuple(plugins)  # imported there before the first message, as another node has them
        self.timeout = timeout
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn = None
        self._cache: str | None = None
        self._loaded: tuple[str, ...] = ()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def load(self, payload: bytes) -> dict:
        """Unpickle `payload` there; the facts of the config it held."""
        return self._ask("load", payload)

    def far_build(self, payload: bytes, policies: Sequence[str], shared_build: bool = True) -> dict:
        """Unpickle a Parcel there and build its config on the meta device under each policy."""
        return self._ask("far-build", payload, policies=tuple(policies), shared_build=shared_build)

    def close(self) -> None:
        """Ask it to stop, then make sure it has."""
        if self._process is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        self._process.join(1.0)
        self._kill()

    def start(self) -> None:
        """Start it now (it is otherwise started on first use); raises FarSideError."""
        if not self.alive:
            self._kill()  # died while idle (or never started): a new one, not a failed row
            self._start()

    # -- internals -------------------------------------------------------------------

    def _ask(self, op: str, payload: bytes, **kwargs) -> dict:
        self.start()
        if self._loaded != self.plugins:
            self._loaded = self.plugins
            self._exchange("plugins", b"", plugins=self.plugins)
        return self._exchange(op, payload, **kwargs)

    def _exchange(self, op: str, payload: bytes, **kwargs) -> dict:
        try:
            self._conn.send((op, payload, kwargs))
            if not self._conn.poll(self.timeout):
                self._kill()
                raise FarSideError(Status.TIMEOUT, f"Timeout: the receiver gave no answer within {self.timeout:g} s")
            kind, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            how = self._death()
            self._kill()
            raise FarSideError(Status.CRASH, f"Crash: receiver process {how}") from exc
        if kind == "raised":
            raise FarSideError(Status(value["status"]), value["message"], value["signature"], value.get("fault", ""),
                               value.get("extras"))
        return value

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._cache = scratch("far-modules-")
        process = ctx.Process(target=main, args=(child,), name="auditor-receiver", daemon=True)
        with child_environment(HF_MODULES_CACHE=self._cache), _children_allowed():
            process.start()
        child.close()
        self._process, self._conn, self._loaded = process, parent, ()
        try:
            ready = parent.poll(START_TIMEOUT)
            message = parent.recv() if ready else None
        except (EOFError, OSError):
            message = None
        if not (isinstance(message, tuple) and message[0] == "ready"):
            how = self._death() if not process.is_alive() else f"not ready within {START_TIMEOUT:g} s"
            self._kill()
            raise FarSideError(Status.CRASH, f"Crash: receiver process failed to start ({how})")

    def _death(self) -> str:
        process = self._process
        if process is None:
            return "is gone"
        process.join(1.0)
        code = process.exitcode
        if code is None:
            return "closed its pipe"
        if code < 0:
            return f"killed by signal {signal.Signals(-code).name}"
        return f"exited with code {code}"

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(5.0)
            with contextlib.suppress(ValueError):
                process.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None


@contextlib.contextmanager
def _children_allowed() -> Iterator[None]:
    """multiprocessing refuses children to daemonic processes, and the pool's workers are
    daemons (so that they never outlive the sweep). The receiver is still cleaned up: it is a
    daemon itself, terminated when the worker exits, and in the worker's process group, which
    the pool kills on a timeout or crash. So the flag is lifted just while it starts."""
    config = multiprocessing.current_process()._config
    daemon = config.pop("daemon", None)
    try:
        yield
    finally:
        if daemon is not None:
            config["daemon"] = daemon


# -- the far side --------------------------------------------------------------------


def main(conn) -> None:
    """Entry point of the receiver process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle
    _forget_modules_caches()
    import torch
    import transformers  # noqa: F401  (up front: the per-message cost is the pickle only)

    heap.settle()
    conn.send(("ready", os.getpid()))
    dtype = torch.get_default_dtype()
    operations = {"load": load, "far-build": far_build, "plugins": load_plugins}
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        op, payload, kwargs = message
        try:
            reply = ("ok", operations[op](payload, **kwargs))
        except Exception as exc:
            reply = ("raised", _described(exc))
        finally:
            torch.set_default_dtype(dtype)
        conn.send(reply)
        if op == "far-build":  # once per model type, as a worker does (a settle costs ~3 ms)
            heap.settle()  # its imports out of the later collections' way


def _forget_modules_caches() -> None:
    """Take every modules cache off sys.path: spawn gives the child the parent's sys.path,
    and another node would not have the parent's cache."""
    sys.path[:] = [entry for entry in sys.path if not (Path(entry or ".") / "transformers_modules").is_dir()]


def load_plugins(payload: bytes, plugins: Sequence[str]) -> dict:
    from auditor.models import cases

    cases.load_plugins(plugins)
    return {}


def load(payload: bytes) -> dict:
    """Unpickle `payload` (a config, or a Parcel holding one) and describe the config."""
    return config_facts(_config_of(pickle.loads(payload)))


def far_build(payload: bytes, policies: Sequence[str], shared_build: bool = True) -> dict:
    """Unpickle a Parcel and build its config on the meta device under each policy.

    The verdicts are those of the decorate check, on the config as it arrived: a new class
    for every type whose config came by value.
    """
    import auditor.engines  # noqa: F401  (registers the engines' decorator policies: vllm)
    from auditor.engines.decorating import verdicts
    from auditor.models.construction_log import constructions
    from auditor.models.meta import build_on_meta, no_init_weights

    parcel = pickle.loads(payload)
    config = _config_of(parcel)
    facts = config_facts(config)
    start = time.perf_counter()
    try:
        with _registered(type(config), getattr(parcel, "model_class", None)):
            # The parent's plain build already ran the weight initialisation on the same values, so
            # this one skips it; its construction log is the policies' recorded build.
            with no_init_weights(), constructions() as log:
                model = build_on_meta(config)
            found = [_verdict_json(v) for v in verdicts(config, model, policies, shared_build, log)]
        facts["verdicts"] = found
        facts["build_seconds"] = time.perf_counter() - start
    except Exception as exc:
        facts["build_failure"] = _builtin_model_refuses_remote(_described(exc))
    facts["dynamic_modules"] = _dynamic_modules()
    return facts


# A composite model of transformers (AlignModel, BlipModel, ClapModel, ClvpModel, FlavaModel,
# GroupViTModel) checks `isinstance(config.text_config, AlignTextConfig)` against its own classes.
# A remote-code config's sub-configs are the remote module's classes, so a config-only
# remote-code repository (auto_map AutoConfig, transformers' own model), as a twin is, meets this
# in any process: `build_on_meta(make_twin(...))` fails the same way before any pickling
# (tests/remote/test_twin.py). Said in the row, so it is not read as a pickling failure.
_REMOTE_SUB_CONFIG = re.compile(r"is expected to be of type .* but is of type <class 'transformers_modules\.")


def _builtin_model_refuses_remote(described: dict) -> dict:
    if described["status"] != Status.ERROR.value or not _REMOTE_SUB_CONFIG.search(described["message"]):
        return described
    note = (" [a config of remote code meets this with transformers' built-in model in any process, pickled "
            "or not: the model checks its sub-configs against transformers' own classes]")
    return {**described, "message": described["message"] + note,
            "extras": {**described.get("extras", {}), "remote_config_with_builtin_model": True}}


def config_facts(config) -> dict:
    """What the two sides compare: the class that arrived, its `to_dict()`, and whether
    receiving it imported any remote-code module."""
    cls = type(config)
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "dict": canonical_dict(config),
        "dynamic_modules": _dynamic_modules(),
    }


def canonical_dict(config) -> str:
    return json.dumps(config.to_dict(), sort_keys=True, default=repr)


def _config_of(obj):
    from auditor.remote.byvalue import Parcel

    return obj.config if isinstance(obj, Parcel) else obj


@contextlib.contextmanager
def _registered(config_class: type, model_class: type | None) -> Iterator[None]:
    """Register a model class that came by value for the config class that came with it,
    as an engine registers remote code with AutoModel; removed again afterwards."""
    if model_class is None:
        yield
        return
    from transformers import AutoModel

    AutoModel.register(config_class, model_class, exist_ok=True)
    try:
        yield
    finally:
        AutoModel._model_mapping._extra_content.pop(config_class, None)


def _verdict_json(verdict) -> dict:
    return {"component": verdict.component, "class": verdict.cls_name, "policy": verdict.policy,
            "status": verdict.status.value, "message": verdict.message, "seconds": verdict.seconds,
            "note": verdict.note}


def _dynamic_modules() -> list[str]:
    from auditor.remote.workspace import dynamic_modules_loaded

    return dynamic_modules_loaded()


def _described(exc: BaseException) -> dict:
    failure = classify(exc)
    return {"status": failure.status.value, "message": failure.message, "signature": failure.signature,
            "fault": failure.fault.value, "extras": failure.extras}
