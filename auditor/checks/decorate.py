"""The `decorate` check: the meta build with each component class under each decorator policy.

One row per (model type, component, policy), with the decorator's verdict: `build`,
`refused` (its own TypeError), `check-error` (its check broke), `decorate-error` (the class
could not be decorated), or the plain build's status when the model fails without any
decorator. The verdicts are auditor.engines.decorating'; policies of the project's own
decorator share the plain build's construction log instead of building again.
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Options
from auditor.core.results import Result
from auditor.core.status import Failure
from auditor.engines.decorating import verdicts
from auditor.models.cases import ModelCase


@register
class DecorateCheck(Check):
    name = "decorate"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, context.options, plain)
            return
        options = context.options
        for verdict in verdicts(context.config(), context.model(), options.decorator_policies, options.shared_policy_build,
                                context.constructions()):
            yield verdict.result(case.model_type, self.name)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        # Without a model there are no components to find: the decoder stands for them all.
        return [Result(case.model_type, self.name, failure.status, component="decoder", policy=policy,
                       message=failure.message, signature=failure.signature) for policy in options.decorator_policies]
