"""The `build` check: the default config, built with AutoModel.from_config on the meta device."""

from __future__ import annotations

import time
from collections.abc import Iterator

from auditor.cases import ModelCase
from auditor.checks import register
from auditor.checks.interface import CaseContext, Check
from auditor.errors import describe
from auditor.results import Result, Status


@register
class BuildCheck(Check):
    name = "build"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.meta import model_facts

        start = time.perf_counter()
        try:
            context.config()
        except Exception as exc:
            status, message, signature = describe(exc)
            if status is Status.ERROR:
                status = Status.CONFIG_ERROR
            yield Result(case.model_type, self.name, status, message=message, signature=signature,
                         seconds=time.perf_counter() - start)
            return
        model = context.model()  # a failure here is mapped to a status by the worker
        facts = model_facts(model)
        yield Result(case.model_type, self.name, Status.BUILD, message=facts["model_class"],
                     seconds=time.perf_counter() - start, extras=facts)
