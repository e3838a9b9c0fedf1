"""The `compile` check: the tiny model really built on --device under the compile decorator, then
compiled the way a serving engine compiles it.

`--compile-semantics` says whose way (auditor.engines.interface.CompileSemantics): an engine's
(`vllm`, the default: guards dropped, the graph compiled at the first length reused at every
other, position ids passed, the engine's gates first), or `plain` (`torch.compile(fullgraph=True)`
with the guards kept: transformers' own fullgraph question). Every row says which (extras
`semantics`).

Under an engine's semantics its gates (the backend check's emulation) come first: a model the
engine stops is not compiled (`skipped`, "not reached: vLLM stops at backend/<gate>: <its
message>", extras `stopped_at`), nor one whose compile a gate turns off (`skipped` with the
engine's reason: vLLM's `enable_if=can_enable_torch_compile` for dynamic rope). With
`--compile-ungated` the gates are not asked: what the engine's compile would do once they pass.

The decoder class (and, with --compile-encoders, each encoder class) is decorated with the
project's `support_torch_compile` in compile mode, under one policy (`fixed` by default), and the
tiny model is built. It runs eagerly at every length (7, 13, 29 for vLLM; 7, 13 plain), then
compiled at the first and called at the others. One row per component, status the outcome:

* `compiled`: one graph, every length, outputs equal to eager within the dtype's tolerance;
* `graph-break`: fullgraph failed; extras say why and where;
* `specialized` (engine semantics): the graph compiled at the first length crashed, or gave
  another output, at a later one (extras `failed_at`, `failure`: crashed, differed, or
  specialized when the first compile already specialized a marked dim);
* `recompiled` (plain semantics): the second length needed another graph, or the marked dims were
  specialized while compiling the first;
* `mismatch`: compiled and eager outputs differ beyond tolerance at the first length (extras:
  `max_abs_diff`);
* `eager-error`: the forward fails without compiling;
* `compile-error`: tracing or the backend failed in another way (a dynamo or inductor error);
* `oom`, `missing-dependency`: as anywhere; `timeout` and `crash` come from the pool;
* `device-error`: the accelerator failed with a sticky error (its worker retires, and what else of
  the type was left runs in a fresh one: auditor.executors.pool); a tiny model that does not build
  because of the machine (a device error, an oom) or the auditor keeps that status and fault;
* when the model cannot be built: the plain build's status, or the decorator's verdict
  (`refused`, `decorate-error`, `check-error`), or `skipped` when the config cannot be shrunk,
  the tiny model does not build for a reason of its own (see the `tiny` check) or the synthesizer
  cannot feed it.

Extras: `semantics`, `tiny_parameters`, `eager_seconds`, `compile_seconds` (the first compiled
call, compile included), `first_run_seconds` (the first call at the second length),
`run_<i>_seconds`, `graphs`, `max_abs_diff`, `tolerance`, `break_reason`, `break_location`,
`breaks` (every graph break, attributed), `recompile_reason`, `backend`, `device`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from auditor import engines
from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.engines.interface import Engine
from auditor.models.cases import ModelCase


@register
class CompileCheck(Check):
    name = "compile"
    runs_models = True

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        options = context.options
        semantics = engines.compile_semantics(options.compile_semantics)
        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, options, plain)
            return
        tiny = None  # the tiny model, built when a variant first needs it, or why it cannot be
        dtype = None  # (its dtype, how --dtype auto resolved it), when a variant first needs it
        for policy, own in variants(options):
            start = time.perf_counter()
            stop = None
            if semantics.gated and not options.compile_ungated:
                stop = engine_stop(engines.get(semantics.name), case, context, own)
            if stop is None:
                dtype = dtype or _dtype(case, context)
                tiny = tiny or (dtype if isinstance(dtype, Failure) else _tiny_model(case, context, dtype[0]))
                stop = (tiny, {}) if isinstance(tiny, Failure) else None
            if stop is not None:
                yield self._row(case, options, policy, stop[0], stop[1], start)
                continue
            for component in _components(tiny.model, options.compile_encoders):
                yield _trial(case, self.name, tiny, component, options, semantics, policy, own, dtype)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        # Without a model there are no components to find: the decoder stands for them all.
        return [self._row(case, options, policy, failure, {}, None) for policy, _ in variants(options)]

    def _row(self, case: ModelCase, options: Options, policy: str, failure: Failure, extras: dict,
             start: float | None) -> Result:
        return Result(case.model_type, self.name, failure.status, component="decoder", policy=policy,
                      message=failure.message, signature=failure.signature,
                      seconds=0.0 if start is None else time.perf_counter() - start,
                      extras={"semantics": options.compile_semantics, **extras})


def variants(options: Options) -> tuple[tuple[str, bool], ...]:
    """(row policy, the engine's own code?) of the compile rows: the project's decorator under
    --compile-policy, and, where the semantics are an engine's that can compile with its own code,
    the engine's own decorator and wrapper when its policy is selected (Engine.variants, the one
    rule), whose rows `auditor agree RUN --policies fixed,vllm` holds the emulation's against."""
    engine = engines.semantics_engine(options.compile_semantics)
    if engine is None or engine.own_compiler is None:
        return ((options.compile_policy, False),)
    return tuple((policy or options.compile_policy, own) for policy, own in engine.variants(options.policies))


def _dtype(case: ModelCase, context: CaseContext) -> tuple[str, str] | Failure:
    """The dtype the tiny model is built in (auditor.checks.tiny.model_dtype), or the Failure of a
    compile row when resolving --dtype auto failed (in the engine's rule, transcribed: the engine's)."""
    from auditor.checks.tiny import model_dtype

    try:
        return model_dtype(case, context)
    except Exception as exc:
        return classify(exc, Phase.ENGINE)


def _tiny_model(case: ModelCase, context: CaseContext, dtype: str = "float32"):
    """The case's tiny model (auditor.models.tiny.TinyModel), or the Failure of a compile row that
    says why there is none."""
    from auditor.checks.tiny import build_device
    from auditor.models.tiny import ShrinkError, tiny_model

    try:
        return tiny_model(context.config(), build_device(context.options.device),
                          trust_remote_code=bool(case.remote_code), dtype=dtype)
    except ShrinkError as exc:
        return Failure.because(Status.SKIPPED, f"cannot shrink: {exc}")
    except Exception as exc:  # the tiny check's finding; here only what no other size would fix
        failure = classify(exc)
        # The machine's failure (a device error, an oom) or the auditor's own is not the model's: it
        # keeps its status and fault rather than reading as a property of the model (`skipped`).
        if failure.environmental or failure.fault is Fault.AUDITOR:
            return failure
        return Failure.because(Status.SKIPPED, f"the tiny model does not build: {failure.message}")


def engine_stop(engine: Engine, case: ModelCase, context: CaseContext, own: bool = False) -> tuple[Failure, dict] | None:
    """Why `engine` would never compile this model (its gates in its order: the emulation's, or
    with `own` its own functions), with the extras of a compile row that says so; None when the
    engine gets as far as compiling it."""
    gates = engine.outcomes(own, case, context, context.config())
    try:
        for gate, outcome in gates:
            if engine.stops_at(gate, outcome):
                message = outcome.message if isinstance(outcome, Failure) else outcome[1]
                return (Failure.because(Status.SKIPPED, f"{engine.not_reached(gate)}: {message}"),
                        {"stopped_at": f"backend/{engine.component(gate)}"})
            if not isinstance(outcome, Failure) and outcome[2].get("compile_enabled") is False:
                column = f"backend/{engine.component(gate)}"
                return (Failure.because(Status.SKIPPED, f"{engine.title} turns compile off at {column}: "
                                                        f"{outcome[1]}"), {"stopped_at": column})
    finally:
        gates.close()
    return None


def _components(model, encoders: bool):
    from auditor.models.components import find_components

    items = find_components(model).items
    return items if encoders else items[:1]


def _trial(case: ModelCase, check: str, tiny, component, options: Options, semantics, policy: str,
           own: bool, dtype: tuple[str, str] = ("float32", "")) -> Result:
    """Build, run and compile one component; every outcome is a row."""
    import torch

    from auditor.checks.compile_trial import CompileOutcome, compile_component, engine_compiler

    start = time.perf_counter()
    try:
        compiler = engine_compiler(engines.get(semantics.name), options) if own else None
        outcome = compile_component(tiny.config, component, options, semantics,
                                    trust_remote_code=bool(case.remote_code), compiler=compiler, dtype=dtype[0])
    except Exception as exc:  # the harness's own failure still ends as a row
        failure = classify(exc)
        outcome = CompileOutcome(failure.status, failure.message, failure.signature)
    finally:
        torch._dynamo.reset()  # the engine's graph keeps no guards: never let it serve the next variant
    extras: dict[str, Any] = {"semantics": semantics.name, "class": component.cls.__name__,
                              "tiny_parameters": tiny.parameters,
                              "backend": options.backend, "device": options.device, "dtype": dtype[0],
                              **({"dtype_rule": dtype[1]} if dtype[1] else {}), **outcome.extras}
    return Result(case.model_type, check, outcome.status, component=component.name, policy=policy,
                  message=outcome.message or component.cls.__name__, signature=outcome.signature,
                  seconds=time.perf_counter() - start, extras=extras)
