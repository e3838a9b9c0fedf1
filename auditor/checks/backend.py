"""The `backend` check: would a serving engine take this model type? (vLLM's Transformers
modeling backend and SGLang's Transformers fallback; auditor/engines/<engine>/ has each one's
gates and cites its source.)

One row per gate, in the order the engine meets them (for vLLM: `backend/registry`,
`backend/build` (the model built under vLLM's settings), `backend/decorate`, `backend/enable-if`, `backend/pp-plan`,
`backend/tp-plan`, `backend/attention`, and the version floors `backend/version:video`,
`backend/version:mtp`; for SGLang `backend/sglang/registry` and so on, Engine.component).
`build` where the engine passes, `unsupported` with its message where it
stops (the build's own failure keeps the classifier's status), `skipped` where a gate does not
apply or is never reached because an earlier stopping gate (the engine says which stop it)
stopped the engine.

It reuses the plain meta build of CaseContext: the engine's build is made only where it may
come out differently. With an engine's own policy selected (`vllm`, `sglang`), each gate also
gets a row of that policy computed by the engine's own functions, which
`auditor agree RUN --policies legacy,vllm` (or `fixed,sglang`) compares with the emulation's rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from auditor import engines
from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.classifier import Phase, classify
from auditor.core.messages import signature_of
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.engines.interface import Engine
from auditor.models.cases import ModelCase


@register
class BackendCheck(Check):
    name = "backend"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        try:
            config = context.config()
        except Exception as exc:
            yield from self.failed_rows(case, context.options, classify(exc, Phase.CONFIG))
            return
        for engine in engines.all():
            for policy, own in engine.variants(context.options.policies):
                yield from self._rows(case, engine, engine.outcomes(own, case, context, config), policy)

    def _rows(self, case: ModelCase, engine: Engine, gates, policy: str) -> Iterator[Result]:
        stopped = ""
        start = time.perf_counter()
        produced = set()
        for gate, outcome in gates:
            produced.add(gate)
            yield self._row(case, engine.component(gate), policy, outcome, start)
            start = time.perf_counter()
            if engine.stops_at(gate, outcome):
                stopped = gate
                break
        gates.close()
        for gate in engine.gate_names:  # the gates the engine never reaches
            if gate not in produced:
                yield self._row(case, engine.component(gate), policy,
                                Failure.because(Status.SKIPPED, engine.not_reached(stopped)), start)

    def _row(self, case, gate, policy, outcome, start) -> Result:
        seconds = time.perf_counter() - start
        if isinstance(outcome, Failure):
            return Result.failed(case.model_type, self.name, outcome, component=gate, policy=policy, seconds=seconds)
        status, message, extras = outcome
        return Result(case.model_type, self.name, status, component=gate, policy=policy, message=message,
                      signature=signature_of(message) if not status.ok else "", seconds=seconds, extras=extras)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        return [Result.failed(case.model_type, self.name, failure, component=engine.component(gate), policy=policy)
                for engine in engines.all() for policy, _ in engine.variants(options.policies)
                for gate in engine.gate_names]
