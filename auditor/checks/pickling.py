"""The `pickle` check: a model type's config sent to another process, by reference and by value.

Rows (check `pickle`; the column is `pickle/<component>[/<policy>]`):

* `by-ref-builtin`: the built-in config, plain pickle, unpickled in the receiver; `to_dict()`
  must be equal on both sides.
* `by-ref-remote`: its remote-code twin (auditor.remote.twin), plain pickle. Expected to fail
  with `No module named 'transformers_modules'`, recorded as `error`: this column shows the
  bug that by-value pickling works around, not a defect of the auditor.
* `by-value-remote`: the twin with cloudpickle's by-value registration and multiprocessing's
  reducer; `to_dict()` equal, and the receiver never imports `transformers_modules`.
* `far-build:<component>` under each policy: the by-value config built on the meta device in
  the receiver, with the decorate check's components and verdicts. Here a correct config
  arrives as a new class, so `fixed-no-config-skip` refuses where `fixed` builds.
* `ray-by-value-remote`: the by-value round trip through a Ray task (skipped without Ray).

The receiver (auditor.remote.receiver) is another process, one per worker, that plays another node.
"""

from __future__ import annotations

import atexit
import json
import time
from collections.abc import Iterator, Sequence

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.classifier import MISSING_DYNAMIC_MODULE, Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.models.cases import ModelCase

BY_REF_BUILTIN = "by-ref-builtin"
BY_REF_REMOTE = "by-ref-remote"
BY_VALUE_REMOTE = "by-value-remote"
FAR_BUILD = "far-build"
RAY = "ray-by-value-remote"


@register
class PickleCheck(Check):
    name = "pickle"

    def __init__(self) -> None:
        self._receiver = None  # one per worker, reused across model types
        self._ray = None

    def start(self, options: Options) -> None:
        """Start the receiver, and join the sweep's Ray cluster, before the worker says it is
        ready: an interpreter start takes seconds, more on a busy machine, and must not be
        charged to the first model type's --timeout. A failure here is left for the rows to
        report."""
        from auditor.remote.ray_trip import ray_missing
        from auditor.remote.receiver import FarSideError

        try:
            self._far(options).start()
        except FarSideError:
            pass
        if not ray_missing():
            try:
                self._trip(options).start()
            except Exception:
                pass  # remembered by RayTrip, reported in the ray column

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        try:
            config = context.config()
        except Exception:
            yield from self.failed_rows(case, context.options, context.plain_failure())
            return
        plain = context.plain_failure()  # None, or why the model itself does not build
        far = self._far(context.options)
        if case.remote_code:
            yield _row(case, BY_REF_BUILTIN, Status.SKIPPED, "a remote-code model has no built-in config")
            remote, model_class = config, (type(context.model()) if plain is None else None)
        else:
            yield self._by_ref_builtin(case, config, far)
            try:
                remote, model_class = _twin(config, case.model_type), None
            except _NoTwin as exc:
                yield from self._without_twin(case, context, plain, str(exc))
                return
        from auditor.remote.byvalue import Parcel

        try:
            yield self._by_ref_remote(case, remote, far)
            yield from self._by_value(case, context, plain, Parcel(remote, model_class), far)
            yield self._by_ray(case, Parcel(remote, model_class), context.options)
        finally:
            if not case.remote_code:
                _forget(remote)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        # A failed config fails every way of sending it; without a model the decoder stands
        # for the far build's components, as in the decorate check.
        def row(component: str, policy: str = "") -> Result:
            return Result(case.model_type, self.name, failure.status, component=component, policy=policy,
                          message=failure.message, signature=failure.signature, fault=failure.fault.value)

        return [row(BY_REF_BUILTIN), row(BY_REF_REMOTE), row(BY_VALUE_REMOTE),
                *(row(f"{FAR_BUILD}:decoder", policy) for policy in options.decorator_policies), row(RAY)]

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
        if self._ray is not None:
            self._ray.close()

    # -- rows ----------------------------------------------------------------------------

    def _by_ref_builtin(self, case: ModelCase, config, far) -> Result:
        from auditor.remote.byvalue import dumps_by_reference

        start = time.perf_counter()
        try:
            facts = far.load(dumps_by_reference(config))
        except Exception as exc:  # on the far side, or it did not even pickle here
            return _failed(case, BY_REF_BUILTIN, exc, start)
        return _compared(case, BY_REF_BUILTIN, config, facts, start)

    def _by_ref_remote(self, case: ModelCase, remote, far) -> Result:
        from auditor.remote.byvalue import dumps_by_reference

        start = time.perf_counter()
        try:
            facts = far.load(dumps_by_reference(remote))
        except Exception as exc:
            failure = _failure_of(exc)
            # The documented outcome (`error`, for want of transformers_modules) is marked expected.
            return _row(case, BY_REF_REMOTE, failure.status, failure.message, start, signature=failure.signature,
                        fault=failure.fault,
                        extras={"expected": True} if MISSING_DYNAMIC_MODULE in failure.message else {})
        return _row(case, BY_REF_REMOTE, Status.BUILD, f"loaded by reference as {facts['class']}: the far "
                    "side could import the remote code", start, extras={"expected": False})

    def _by_value(self, case: ModelCase, context: CaseContext, plain: Failure | None, parcel,
                  far) -> Iterator[Result]:
        from auditor.remote.byvalue import dumps_by_value

        options = context.options
        components = _components(context) if plain is None else ["decoder"]
        start = time.perf_counter()
        try:
            payload = dumps_by_value(parcel)
            if plain is None:
                facts = far.far_build(payload, options.decorator_policies, options.shared_policy_build)
            else:
                facts = far.load(payload)
        except Exception as exc:
            failure = _failure_of(exc)
            yield _row(case, BY_VALUE_REMOTE, failure.status, failure.message, start, signature=failure.signature,
                        fault=failure.fault)
            yield from _far_rows(case, components, options.decorator_policies, plain or failure)
            return
        yield _compared(case, BY_VALUE_REMOTE, parcel.config, facts, start)
        if plain is not None or "build_failure" in facts:
            failed = facts.get("build_failure", {})
            yield from _far_rows(case, components, options.decorator_policies, plain or Failure(
                Status(failed["status"]), failed["message"], failed["signature"],
                Fault(failed["fault"]) if failed.get("fault") else None, failed.get("extras", {})))
            return
        # The refusal the far build exists to show: the config came by value as a new class, so the
        # policy without the config exemption refuses a component that `fixed` builds.
        fixed_builds = {v["component"] for v in facts["verdicts"] if v["policy"] == "fixed" and v["status"] == "build"}
        for verdict in facts["verdicts"]:
            message = verdict["message"]
            extras = {"class": verdict["class"], "config_class": facts["class"]}
            if verdict["policy"] == "fixed-no-config-skip" and verdict["status"] == Status.REFUSED.value:
                extras["expected"] = verdict["component"] in fixed_builds
            yield Result(case.model_type, self.name, Status(verdict["status"]),
                         component=f"{FAR_BUILD}:{verdict['component']}", policy=verdict["policy"],
                         message=message or verdict["class"], signature=signature_of(message) if message else "",
                         seconds=verdict["seconds"],
                         extras={**extras, **({"note": verdict["note"]} if verdict["note"] else {})})

    def _by_ray(self, case: ModelCase, parcel, options: Options) -> Result:
        from auditor.remote.ray_trip import ray_missing

        reason = ray_missing()
        if reason:
            return _row(case, RAY, Status.SKIPPED, reason)
        start = time.perf_counter()
        try:
            facts = self._trip(options).round_trip(parcel)
        except Exception as exc:
            failure = _failure_of(exc)
            return _row(case, RAY, failure.status, failure.message, start, signature=failure.signature,
                        fault=failure.fault)
        return _compared(case, RAY, parcel.config, facts, start)

    def _without_twin(self, case: ModelCase, context: CaseContext, plain: Failure | None, reason: str):
        for component in (BY_REF_REMOTE, BY_VALUE_REMOTE):
            yield _row(case, component, Status.SKIPPED, reason)
        skipped = Failure.because(Status.SKIPPED, reason)
        components = _components(context) if plain is None else ["decoder"]
        yield from _far_rows(case, components, context.options.decorator_policies, plain or skipped)
        yield _row(case, RAY, Status.SKIPPED, reason)

    def _trip(self, options: Options):
        """This worker's RayTrip: into the sweep's cluster, made once."""
        from auditor.remote.ray_trip import RayTrip

        if self._ray is None:
            self._ray = RayTrip(cluster=options.ray_cluster)
        return self._ray

    def _far(self, options: Options):
        from auditor.remote.receiver import Receiver

        if self._receiver is None:
            self._receiver = Receiver()
            atexit.register(self.close)
        self._receiver.plugins = options.plugins
        return self._receiver


# -- helpers ---------------------------------------------------------------------------------


class _NoTwin(Exception):
    pass


def _twin(config, model_type: str):
    from auditor.remote.twin import TwinError, make_twin

    try:
        return make_twin(config, model_type)
    except TwinError as exc:
        raise _NoTwin(f"NoRemoteCodeTwin: {exc}") from exc


def _forget(remote) -> None:
    """Drop the twin's modules from sys.modules: one model type's remote code must not
    outlive it in the worker."""
    from auditor.remote.workspace import forget_dynamic_modules, is_dynamic

    module = type(remote).__module__
    if is_dynamic(module):
        forget_dynamic_modules(".".join(module.split(".")[:2]))


def _components(context: CaseContext) -> list[str]:
    from auditor.engines.decorating import component_names

    return component_names(context.model())


def _far_rows(case: ModelCase, components: Sequence[str], policies: Sequence[str], failure: Failure) -> Iterator[Result]:
    for policy in policies:
        for component in components:
            yield Result.failed(case.model_type, PickleCheck.name, failure, component=f"{FAR_BUILD}:{component}",
                                policy=policy)


def _compared(case: ModelCase, component: str, config, facts: dict, start: float) -> Result:
    """Passed when the far side's `to_dict()` equals ours and it imported no remote code."""
    from auditor.remote.receiver import canonical_dict

    extras = {"class": facts["class"]}
    ours = canonical_dict(config)
    if facts["dict"] != ours:
        keys = _differing_keys(json.loads(ours), json.loads(facts["dict"]))
        return _row(case, component, Status.ERROR, f"RoundTripMismatch: to_dict() differs on the far side "
                    f"in {', '.join(keys) or 'its values'}", start, extras=extras)
    if facts["dynamic_modules"]:
        return _row(case, component, Status.ERROR, "RemoteCodeImported: receiving it imported "
                    f"{', '.join(facts['dynamic_modules'][:3])}", start, extras=extras)
    return _row(case, component, Status.BUILD, f"arrived as {facts['class'].rpartition('.')[2]}", start,
                signature="", extras=extras)


def _differing_keys(ours: dict, theirs: dict) -> list[str]:
    keys = sorted(set(ours) | set(theirs))
    return [key for key in keys if ours.get(key, object()) != theirs.get(key, object())][:10]


def _failure_of(exc: Exception) -> Failure:
    """A round trip's failure: on the far side (a FarSideError says how), in Ray, or here."""
    return classify(exc, Phase.TRANSPORT)


def _failed(case: ModelCase, component: str, exc: Exception, start: float) -> Result:
    failure = _failure_of(exc)
    return _row(case, component, failure.status, failure.message, start, signature=failure.signature,
                        fault=failure.fault)


def _row(case: ModelCase, component: str, status: Status, message: str, start: float | None = None, *,
         signature: str | None = None, extras: dict | None = None, fault: Fault | None = None) -> Result:
    if signature is None:
        signature = signature_of(message) if message and not status.ok else ""
    return Result(case.model_type, PickleCheck.name, status, component=component, message=message,
                  signature=signature, seconds=time.perf_counter() - start if start is not None else 0.0,
                  extras=extras or {}, fault=fault.value if fault is not None else "")
