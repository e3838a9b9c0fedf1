"""The `serves` check: what each installed engine really serves, by its own code.

An engine picks how it serves a type (vLLM: its own native class where its registry has one,
the Transformers backend otherwise, or nothing); the backend check asks only whether the
Transformers backend would take it. This check asks the engine's whole answer
(`Engine.serves`; vLLM's get_model with model_impl="auto", auditor/engines/vllm/native.py;
SGLang's own model loader with --model-impl transformers, auditor/engines/sglang/serving.py): one
row per installed engine that has one, `serves/<engine>`: `build` with "servable: native X" or
"servable: Transformers backend (X)", or where it stops, judged by the one fault rule; a limit
of this machine (a meta-device copy, a kernel the wheel lacks) is `undecided`. Needs the engine:
selected by name (`--checks ...,serves`), refused before any work where no engine can answer.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator

from auditor import engines
from auditor.checks import Options, register
from auditor.checks.interface import CaseContext, Check
from auditor.core.classifier import Phase, classify
from auditor.core.messages import signature_of
from auditor.core.results import Result
from auditor.core.status import Failure
from auditor.models.cases import ModelCase


def answering() -> tuple:
    """The installed engines with an answer of their own."""
    return tuple(engine for engine in engines.all() if engine.serves is not None and engine.installed)


def _packages() -> tuple[str, ...]:
    """The packages of the engines with an answer of their own: any one of them will do."""
    return tuple(dict.fromkeys(e.package for e in engines.all() if e.serves is not None))


def _required() -> tuple[str, ...]:
    """The package the check needs: an installed engine with an answer of its own (vLLM's or
    SGLang's, whichever is here), else the first such engine's, whose install hint the refusal gives."""
    packages = _packages()
    here = [package for package in packages if importlib.util.find_spec(package) is not None]
    return tuple((here or packages)[:1])


@register
class ServesCheck(Check):
    name = "serves"
    requires = _required()
    requires_one_of = _packages()  # what the docs say it needs, wherever they are built

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        """One row per answering engine, in the cells `run` fills (`serves/<engine>`): what a worker's
        death (an oom, a timeout, a crash) writes there, so that its rerun claims the same cell."""
        return [Result.failed(case.model_type, self.name, failure, component=e.name) for e in answering()]

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        try:
            context.config()
        except Exception as exc:
            yield from self.failed_rows(case, context.options, classify(exc, Phase.CONFIG))
            return
        for engine in answering():
            start = time.perf_counter()
            try:
                outcome = engine.serves(case, context)
            except Exception as exc:  # what the engine's answer raised: judged by the one rule
                outcome = classify(exc, Phase.ENGINE, engine_package=engine.package)
            seconds = time.perf_counter() - start
            if isinstance(outcome, Failure):
                yield Result.failed(case.model_type, self.name, outcome, component=engine.name, seconds=seconds)
                continue
            status, message, extras = outcome
            yield Result(case.model_type, self.name, status, component=engine.name, message=message,
                         signature=signature_of(message) if not status.ok else "", seconds=seconds,
                         extras={**extras, "engine_version": engine.version})
