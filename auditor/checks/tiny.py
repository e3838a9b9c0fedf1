"""The `tiny` check: the default config shrunk (auditor.models.tiny) and really built on --device.

`build` with the tiny parameter count; `skipped` when no tiny variant of the config is accepted
by its constructor; the failure's status (`error`, `missing-dependency`, `oom`...) when the tiny
model does not build; the plain meta build's status when even that fails. It makes the shrinker's
success rate measurable from the matrix; the compile check builds the same tiny model.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check
from auditor.core.classifier import classify
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.models.cases import ModelCase


@register
class TinyCheck(Check):
    name = "tiny"
    runs_models = True

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.models.meta import model_facts
        from auditor.models.tiny import ShrinkError, tiny_model

        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, context.options, plain)
            return
        start = time.perf_counter()
        extras = {"default_parameters": model_facts(context.model())["parameters"]}
        try:
            tiny = tiny_model(context.config(), build_device(context.options.device),
                              trust_remote_code=bool(case.remote_code), dtype=model_dtype(case, context)[0])
        except ShrinkError as exc:
            yield Result(case.model_type, self.name, Status.SKIPPED, message=f"cannot shrink: {exc}",
                         seconds=time.perf_counter() - start, extras=extras)
            return
        except Exception as exc:
            failure = classify(exc)
            yield Result(case.model_type, self.name, failure.status, message=failure.message,
                         signature=failure.signature, seconds=time.perf_counter() - start, extras=extras)
            return
        name = type(tiny.model).__name__
        extras["dtype"] = str(tiny.model.dtype).removeprefix("torch.")
        yield Result(case.model_type, self.name, Status.BUILD, message=name, seconds=time.perf_counter() - start,
                     extras={**extras, "model_class": name, "tiny_parameters": tiny.parameters,
                             "tiny_layers": tiny.sizes.layers})


def model_dtype(case: ModelCase, context: CaseContext) -> tuple[str, str]:
    """The dtype the checks that run models build this type in under --dtype, and how "auto" was
    resolved ("" when given): auditor.engines.model_dtype."""
    from auditor import engines

    options = context.options
    return engines.model_dtype(options.dtype, options.compile_semantics, case.model_type, context.config(),
                               build_device(options.device))


def build_device(device: str) -> str:
    """Where a real build goes: --device, or the CPU when the sweep is on meta."""
    return "cpu" if device == "meta" else device
