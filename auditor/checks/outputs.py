"""The `outputs` check: each installed engine runs the type's tiny checkpoint for real, and what it
returns is held to transformers' own forward of the same checkpoint.

For each type: a tiny checkpoint in a shape the engine's kernels take on this device
(auditor.models.served: the head size from the engine's attention backend, weights drawn so the
logits are not flat, the head untied); transformers' logits on a seeded prompt longer than every
tiny window, and its greedy continuation (auditor.engines.outputs); then each way the engine
serves the type (`Engine.run_paths`: vLLM's `model_impl="auto"`, its native class where it has
one, row `outputs/vllm`; and its Transformers backend, `outputs/vllm/transformers`), run by the
engine's own code (`Engine.runs`: vllm/running.py). Where vLLM's "auto" picks the Transformers
backend itself, that run is the backend's row too (said so), not run twice.

Verdicts: `same`; `different-outputs` with the largest logprob difference, its position and the
top-1 agreement (the engine's on its Transformers backend, which runs transformers' own code; the
pairing's, `engine/model`, on a native class: either side may be wrong); what the engine raised, judged by the one fault rule with vLLM's
file:line (a limit of this device, a kernel the build lacks: `undecided`); `skipped` where no
checkpoint can be made (no class with logits) or transformers' own forward raised (the build
and tiny checks' verdict, not this one's). Needs an engine that runs models (vLLM): selected by
name, refused before any work where none is installed.
"""

from __future__ import annotations

import functools
import importlib.util
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from auditor import engines
from auditor.checks import Options, register
from auditor.checks.interface import CaseContext, Check
from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault
from auditor.core.messages import message_of, signature_of
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.engines.interface import pairing
from auditor.models.cases import ModelCase


def running() -> tuple:
    """The installed engines that run models for real (`Engine.runs`)."""
    return tuple(engine for engine in engines.all() if engine.runs is not None and engine.installed)


def _required() -> tuple[str, ...]:
    packages = tuple(dict.fromkeys(e.package for e in engines.all() if e.runs is not None))
    here = [package for package in packages if importlib.util.find_spec(package) is not None]
    return tuple((here or packages)[:1])


def components(engine) -> tuple[tuple[str, str], ...]:
    """(row component, the engine's way of serving) of each path of `engine`: ("vllm", "auto"),
    ("vllm/transformers", "transformers")."""
    return tuple((f"{engine.name}/{suffix}" if suffix else engine.name, impl) for suffix, impl in engine.run_paths)


@functools.cache
def _head_size(name: str, dtype: str) -> int:
    """The engine's head size on this device, asked once per process."""
    return engines.get(name).head_size(dtype)


def dtype_of(options: Options) -> str:
    """The dtype both sides run in: --dtype where it names one the tolerances know, else float32."""
    from auditor.engines.outputs import TOLERANCE

    return options.dtype if options.dtype in TOLERANCE else "float32"


@register
class OutputsCheck(Check):
    name = "outputs"
    requires = _required()
    runs_models = True

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        return [Result.failed(case.model_type, self.name, failure, component=component)
                for engine in running() for component, _ in components(engine)]

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        try:
            config = context.config()
        except Exception as exc:
            yield from self.failed_rows(case, context.options, classify(exc, Phase.CONFIG))
            return
        dtype = dtype_of(context.options)
        for engine in running():
            with tempfile.TemporaryDirectory(prefix="auditor-outputs-") as tmp:
                yield from self._engine_rows(engine, case, config, dtype, Path(tmp))

    def _engine_rows(self, engine, case: ModelCase, config, dtype: str, folder: Path) -> Iterator[Result]:
        from auditor.engines.outputs import (
            GREEDY_TOKENS,
            PROMPT_LENGTH,
            embedding_verdict,
            reference_hidden,
            reference_outputs,
            verdict,
        )
        from auditor.models.served import EMBED, CannotServe, write

        paths = components(engine)
        start = time.perf_counter()

        def rows(outcome) -> list[Result]:
            return [self._row(case, component, outcome, time.perf_counter() - start, engine) for component, _ in paths]

        try:
            size = _head_size(engine.name, dtype)
        except Exception as exc:  # the engine's own attention selection raised
            yield from rows(classify(exc, Phase.ENGINE, engine_package=engine.package))
            return
        try:
            made = write(config, case.model_type, folder, size, PROMPT_LENGTH)
        except CannotServe as exc:
            yield from rows((Status.SKIPPED, f"no checkpoint to serve: {exc}", {}))
            return
        except Exception as exc:  # the type's tiny model does not build: the build and tiny checks' verdict
            yield from rows((Status.SKIPPED, f"no checkpoint to serve: its tiny model raised {message_of(exc)}", {}))
            return
        try:
            reference = (reference_hidden(made.model, made.prompt) if made.task == EMBED
                         else reference_outputs(made.model, made.prompt, GREEDY_TOKENS))
        except Exception as exc:
            yield from rows((Status.SKIPPED, f"nothing to compare with: transformers' own forward raised "
                                             f"{message_of(exc)}", {}))
            return
        judge = embedding_verdict if made.task == EMBED else verdict
        classes = tuple({type(module): None for module in made.model.modules()})  # put back after each run
        shape = {"head_size": size, "architecture": made.architecture, "prompt_length": len(made.prompt),
                 "task": made.task, **({"files": made.files} if made.files else {}),
                 **({"changed": {k: list(v) for k, v in made.changed.items()}} if made.changed else {})}
        picked = None  # vLLM's "auto" run, where it picked the backend itself
        for component, impl in paths:
            begun = time.perf_counter()
            title = f"{engine.title} ({impl})"
            if picked is not None and impl == "transformers":
                outcome = _as_backend(picked, engine)
            else:
                try:
                    served = engine.runs(folder, made.prompt, impl, dtype, GREEDY_TOKENS, made.vocab, made.task,
                                         made.tokenizer, classes)
                except Exception as exc:
                    outcome = _failure(exc, engine)
                else:
                    title = _title(engine, impl, served.extras)
                    fault = Fault.ENGINE if served.extras.get("transformers_backend") else Fault.PAIRING
                    outcome = judge(reference, served, dtype, title, {**shape, **served.extras, "impl": impl}, fault)
                    if impl == "auto" and served.extras.get("transformers_backend"):
                        picked = outcome
            yield self._row(case, component, outcome, time.perf_counter() - begun, engine)

    @staticmethod
    def _row(case: ModelCase, component: str, outcome, seconds: float, engine) -> Result:
        named = {"engine_version": engine.version, "pairing": pairing(engine.package)}  # as --force-transformers left it
        if isinstance(outcome, Failure):
            return Result.failed(case.model_type, "outputs", outcome, component=component, seconds=seconds,
                                 extras=named)
        status, message, extras = outcome
        return Result(case.model_type, "outputs", status, component=component, message=message,
                      signature=signature_of(message) if not status.ok else "", seconds=seconds,
                      extras={**extras, **named})


def _failure(exc: BaseException, engine) -> Failure:
    """What the engine's run raised, by the one fault rule; a file the made folder lacks (an OSError
    reading it: a processor's feature extractor the auditor could not write) is this machine's
    input, not the model's or the engine's, as in the serves check."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError):
            message = f"environment limit (a file the made checkpoint lacks: {message_of(cause)})"
            return Failure(Status.UNDECIDED, message, signature_of(message), Fault.ENVIRONMENT)
        cause = cause.__cause__ or cause.__context__
    return classify(exc, Phase.ENGINE, engine_package=engine.package)


def _title(engine, impl: str, extras: dict) -> str:
    """How a row names what ran: "vLLM's native LlamaForCausalLM", "vLLM's Transformers backend"."""
    architecture = extras.get("architecture", "")
    if extras.get("transformers_backend"):
        return f"{engine.title}'s Transformers backend ({architecture})"
    return f"{engine.title}'s native {architecture}" if architecture else f"{engine.title} ({impl})"


def _as_backend(outcome, engine):
    """The "auto" run's outcome, for the backend's row: the engine picked its Transformers backend itself."""
    note = f"{engine.title}'s \"auto\" picked its Transformers backend (no native class): that run, not repeated"
    if isinstance(outcome, Failure):
        return Failure(outcome.status, f"{outcome.message} [{note}]", outcome.signature, outcome.fault,
                       {**outcome.extras, "same_run_as": "auto"})
    status, message, extras = outcome
    return status, f"{message} [{note}]", {**extras, "same_run_as": "auto"}
