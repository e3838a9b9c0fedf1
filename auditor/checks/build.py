"""The `build` check: the default config, built with AutoModel.from_config on the meta device.

Its row also carries the config's fingerprint (auditor.models.fingerprint), whenever the config
could be made, built or not: what `auditor diff` compares for config drift between releases.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

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
        fingerprint = _fingerprint(context)
        if failure is not None:
            for row in self.failed_rows(case, context.options, failure):
                yield replace(row, extras={**row.extras, "fingerprint": fingerprint}) if fingerprint else row
            return
        facts = model_facts(context.model())
        yield Result(case.model_type, self.name, Status.BUILD, message=facts["model_class"],
                     seconds=time.perf_counter() - start, extras={**facts, "fingerprint": fingerprint})


def _fingerprint(context: CaseContext) -> dict | None:
    """The config's fingerprint; None when the config cannot be had or cannot be fingerprinted
    (an auditor problem that must not cost the build row)."""
    from auditor.models.fingerprint import config_fingerprint

    try:
        return config_fingerprint(context.config())
    except Exception:
        return None
