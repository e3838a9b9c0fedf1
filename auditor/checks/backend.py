"""The `backend` check: would vLLM's Transformers modeling backend take this model type?

One row per gate, in the order vLLM meets them (auditor.models.backend_gates has the
emulation and cites vLLM's source): `backend/registry`, `backend/build` (the model built
under vLLM's settings), `backend/enable-if`, `backend/pp-plan`, `backend/tp-plan`,
`backend/attention`, and the version floors `backend/version:video`, `backend/version:mtp`.
`build` where vLLM passes, `unsupported` with vLLM's message where it stops (the build's own
failure keeps the classifier's status), `skipped` where a gate does not apply or is never
reached because an earlier one stopped vLLM. The pipeline-parallel gate does not stop a
single-stage run, so it stops nothing after it; nor do the version floors (they take a
feature away).

It reuses the plain meta build of CaseContext: vLLM's build is made only where it may come
out differently (auditor.models.vllm_build.needs_own_build). With the `vllm` policy selected,
each gate also gets a row of policy `vllm` computed by vLLM's own functions
(auditor.models.vllm_gates), which `auditor agree RUN --policies legacy,vllm` compares with
the emulation's rows.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.results import Result
from auditor.core.status import Failure, Phase, Status, classify, signature_of
from auditor.models.cases import ModelCase

GATES = ("registry", "build", "enable-if", "pp-plan", "tp-plan", "attention", "version:video", "version:mtp")
# Gates whose failure stops vLLM from serving the model at all (the plans and the attention
# check run once the model is built, in this order: base.py:185-191).
_STOPPING = ("registry", "build", "enable-if", "tp-plan", "attention")


@register
class BackendCheck(Check):
    name = "backend"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        try:
            config = context.config()
        except Exception as exc:
            yield from self.failed_rows(case, context.options, classify(exc, Phase.CONFIG))
            return
        yield from self._rows(case, context, emulated_gates(case, context, config), policy="")
        if "vllm" in context.options.policies:
            from auditor.models.vllm_gates import VLLM_FUNCTIONS

            yield from self._rows(case, context, emulated_gates(case, context, config, VLLM_FUNCTIONS),
                                  policy="vllm")

    def _rows(self, case: ModelCase, context: CaseContext, gates, policy: str) -> Iterator[Result]:
        stopped = ""
        start = time.perf_counter()
        produced = set()
        for gate, outcome in gates:
            produced.add(gate)
            yield self._row(case, gate, policy, outcome, start)
            start = time.perf_counter()
            if gate in _STOPPING and not _passed(outcome):
                stopped = gate
                break
        gates.close()
        for gate in GATES:  # the gates vLLM never reaches
            if gate not in produced:
                yield self._row(case, gate, policy, Failure.because(
                    Status.SKIPPED, f"not reached: vLLM stops at backend/{stopped}"), start)

    def _row(self, case, gate, policy, outcome, start) -> Result:
        seconds = time.perf_counter() - start
        if isinstance(outcome, Failure):
            return Result(case.model_type, self.name, outcome.status, component=gate, policy=policy,
                          message=outcome.message, signature=outcome.signature, seconds=seconds)
        status, message, extras = outcome
        return Result(case.model_type, self.name, status, component=gate, policy=policy, message=message,
                      signature=signature_of(message) if not status.ok else "", seconds=seconds, extras=extras)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        policies = [""] + (["vllm"] if "vllm" in options.policies else [])
        return [Result(case.model_type, self.name, failure.status, component=gate, policy=policy,
                       message=failure.message, signature=failure.signature)
                for policy in policies for gate in GATES]


def _passed(outcome) -> bool:
    return not isinstance(outcome, Failure) and outcome[0].ok


def _safely(gate, *args) -> tuple[Status, str, dict]:
    """A gate's outcome; what vLLM's own step would raise on this model (an attribute its plan
    names but the model lacks, say) stops vLLM there just the same."""
    from auditor.core.status import message_of

    try:
        return verdict_outcome(gate(*args))
    except Exception as exc:
        return Status.UNSUPPORTED, message_of(exc), {}


def verdict_outcome(verdict) -> tuple[Status, str, dict]:
    return (Status.BUILD if verdict.ok else Status.UNSUPPORTED), verdict.message, dict(verdict.extras)


def emulated_gates(case: ModelCase, context: CaseContext, config, functions=None):
    """(gate, outcome) in vLLM's order; an outcome is (status, message, extras) or a Failure.
    Stops after a stopping gate fails (the caller fills in the rest as not reached).
    `functions`: gate functions that replace the emulation's (vLLM's own, for the vllm rows)."""
    import types

    import transformers

    from auditor.models import backend_gates

    gates = types.SimpleNamespace(**{name: getattr(backend_gates, name) for name in dir(backend_gates)
                                     if not name.startswith("__")})
    gates.__dict__.update(vars(functions) if functions is not None else {})
    from auditor.models.vllm_build import build_like_vllm, needs_own_build, patched_in_place

    model_cls = None
    if case.remote_code:
        with contextlib.suppress(Exception):
            model_cls = type(context.model())
    registry = gates.registry_gate(config, case.model_type, model_cls)
    yield "registry", verdict_outcome(registry)
    if not registry.ok:
        return
    plain = context.plain_failure()
    own_build = needs_own_build(plain is not None, context.attention_reads())
    with contextlib.ExitStack() as stack:
        try:
            if own_build:
                vllm_config, model = build_like_vllm(config, trust_remote_code=bool(case.remote_code))
            else:
                model = context.model()
                vllm_config = stack.enter_context(patched_in_place(model))
        except Exception as exc:
            yield "build", classify(exc)
            return
        how = "built again under vLLM's settings" if own_build else "the plain meta build stands in for it"
        yield "build", (Status.BUILD, type(model).__name__, {"model_class": type(model).__name__, "own_build": own_build,
                                                              "note": how})
        yield "enable-if", _safely(gates.enable_if_gate, vllm_config)
        yield "pp-plan", _safely(gates.pp_plan_gate, model)
        yield "tp-plan", _safely(gates.tp_plan_gate, model)
        yield "attention", _safely(gates.attention_gate, model, vllm_config)
    yield "version:video", _floor(gates.version_gate, gates.has_video_processor(case.model_type) and gates.is_multimodal(config),
                                  "video inputs", gates.VIDEO_FLOOR, transformers.__version__, "no video processor")
    yield "version:mtp", _floor(gates.version_gate, gates.has_mtp(config), "MTP", gates.MTP_FLOOR, transformers.__version__,
                                "the config sets no num_mtp_layers")


def _floor(version_gate, applies: bool, feature: str, floor: str, installed: str, why_not: str):
    if not applies:
        return Failure.because(Status.SKIPPED, f"does not apply: {why_not}")
    return verdict_outcome(version_gate(feature, floor, installed))
