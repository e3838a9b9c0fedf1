"""The `compile` check: the tiny model really built on --device under the compile decorator, then
compiled the way a serving engine compiles it.

The decoder class (and, with --compile-encoders, each encoder class) is decorated with the
project's `support_torch_compile` in compile mode, under one policy (`fixed` by default), and the
tiny model is built. It runs eagerly on two sequence lengths, then compiled: the first call marks
the decorator's dynamic dims and compiles forward with `fullgraph=True` on --backend; the second
length must not compile again. One row per component, status the compile outcome:

* `compiled`: one graph, both lengths, outputs equal to eager within the dtype's tolerance;
* `graph-break`: fullgraph failed; extras say why and where;
* `recompiled`: the second length needed another graph (vLLM forbids it after the first run), or
  the marked dims were specialized while compiling the first;
* `mismatch`: compiled and eager outputs differ beyond tolerance (extras: `max_abs_diff`);
* `eager-error`: the forward fails without compiling;
* `compile-error`: tracing or the backend failed in another way (a dynamo or inductor error);
* `oom`, `missing-dependency`: as anywhere; `timeout` and `crash` come from the pool;
* when the model cannot be built: the plain build's status, or the decorator's verdict
  (`refused`, `decorate-error`, `check-error`), or `skipped` when the config cannot be shrunk,
  the tiny model does not build (see the `tiny` check) or the synthesizer cannot feed it.

Extras: `tiny_parameters`, `eager_seconds`, `compile_seconds` (the first compiled call, compile
included), `first_run_seconds` (the first call at the second length), `graphs`, `max_abs_diff`,
`tolerance`, `break_reason`, `break_location`, `recompile_reason`, `backend`, `device`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.results import Result
from auditor.core.status import Failure, Status, classify, signature_of
from auditor.models.cases import ModelCase


@register
class CompileCheck(Check):
    name = "compile"
    runs_models = True

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.checks.tiny import build_device
        from auditor.models.tiny import ShrinkError, tiny_model

        options = context.options
        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, options, plain)
            return
        start = time.perf_counter()
        try:
            tiny = tiny_model(context.config(), build_device(options.device), trust_remote_code=bool(case.remote_code))
        except ShrinkError as exc:
            yield from self._skipped(case, options, f"cannot shrink: {exc}", start)
            return
        except Exception as exc:  # the tiny check's finding; here only what no other size would fix
            failure = classify(exc)
            if failure.environmental:
                yield from self.failed_rows(case, options, failure)
            else:
                yield from self._skipped(case, options, f"the tiny model does not build: {failure.message}", start)
            return
        for component in _components(tiny.model, options.compile_encoders):
            yield _trial(case, self.name, tiny, component, options)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        # Without a model there are no components to find: the decoder stands for them all.
        return [Result(case.model_type, self.name, failure.status, component="decoder",
                       policy=options.compile_policy, message=failure.message, signature=failure.signature)]

    def _skipped(self, case: ModelCase, options: Options, message: str, start: float) -> Iterator[Result]:
        yield Result(case.model_type, self.name, Status.SKIPPED, component="decoder", policy=options.compile_policy,
                     message=message, signature=signature_of(message), seconds=time.perf_counter() - start)


def _components(model, encoders: bool):
    from auditor.models.components import find_components

    items = find_components(model).items
    return items if encoders else items[:1]


def _trial(case: ModelCase, check: str, tiny, component, options: Options) -> Result:
    """Build, run and compile one component; every outcome is a row."""
    import torch

    from auditor.checks.compile_trial import CompileOutcome, compile_component

    start = time.perf_counter()
    try:
        outcome = compile_component(tiny.config, component, options, trust_remote_code=bool(case.remote_code))
    except Exception as exc:  # the harness's own failure still ends as a row
        failure = classify(exc)
        outcome = CompileOutcome(failure.status, failure.message, failure.signature)
    finally:
        torch._dynamo.reset()
    extras: dict[str, Any] = {"class": component.cls.__name__, "tiny_parameters": tiny.parameters,
                              "backend": options.backend, "device": options.device, **outcome.extras}
    return Result(case.model_type, check, outcome.status, component=component.name, policy=options.compile_policy,
                  message=outcome.message or component.cls.__name__, signature=outcome.signature,
                  seconds=time.perf_counter() - start, extras=extras)
