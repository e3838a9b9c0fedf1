"""The `build` check: the default config, built with AutoModel.from_config on the meta device."""

from __future__ import annotations

import time
from collections.abc import Iterator

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.models.cases import ModelCase


@register
class BuildCheck(Check):
    name = "build"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.models.meta import model_facts

        start = time.perf_counter()
        failure = context.plain_failure()
        if failure is not None:
            yield from self.failed_rows(case, context.options, failure)
            return
        facts = model_facts(context.model())
        yield Result(case.model_type, self.name, Status.BUILD, message=facts["model_class"],
                     seconds=time.perf_counter() - start, extras=facts)
