"""The `decorate` check: the meta build with each component class under each decorator policy.

One row per (model type, component, policy), with the decorator's verdict: `build`,
`refused` (its own TypeError), `check-error` (its check broke), `decorate-error` (the class
could not be decorated), or the plain build's status when the model fails without any
decorator. Policies of the project's own decorator share one recorded build (see
recording.py); external decorators are opaque, so each gets a real build per component.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from auditor.cases import ModelCase
from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Failure, Options
from auditor.checks.recording import Recording, recording
from auditor.components import Component, find_components
from auditor.errors import describe, message_of, signature_of
from auditor.results import Result, Status


@register
class DecorateCheck(Check):
    name = "decorate"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        from auditor.decorators import get_policy

        start = time.perf_counter()
        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, context.options, plain)
            return
        components = find_components(context.model())
        decorators = [get_policy(name) for name in context.options.policies]
        own = [d for d in decorators if _is_own(d)]
        record = self._record(context, components.items) if own and context.options.shared_policy_build else None
        extras = {"note": components.note} if components.note else {}
        for decorator in decorators:
            for component in components.items:
                status, message = self._verdict(context, component, decorator, record)
                yield Result(
                    case.model_type, self.name, status, component=component.name, policy=decorator.name,
                    message=message or component.cls.__name__,
                    signature=signature_of(message) if message else "",
                    seconds=time.perf_counter() - start,
                    extras={"class": component.cls.__name__, **extras},
                )
                start = time.perf_counter()

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        # Without a model there are no components to find: the decoder stands for them all.
        return [Result(case.model_type, self.name, failure.status, component="decoder", policy=policy,
                       message=failure.message, signature=failure.signature) for policy in options.policies]

    def _record(self, context: CaseContext, items: tuple[Component, ...]) -> Recording:
        from auditor.meta import build_on_meta

        with recording([component.cls for component in items]) as record:
            build_on_meta(context.config())
        return record

    def _verdict(self, context, component: Component, decorator, record: Recording | None) -> tuple[Status, str]:
        from auditor.decorators import DecorateError, classify_failure, decorated
        from auditor.meta import build_on_meta

        try:
            with decorated(component.cls, decorator, component.dynamic_arg_dims):
                if record is None or not _is_own(decorator):
                    build_on_meta(context.config())
                else:
                    _replay(decorator.policy, record.calls.get(component.cls, []))
        except DecorateError as exc:
            return Status.DECORATE_ERROR, message_of(exc.original)
        except Exception as exc:
            outcome = classify_failure(exc, decorator)
            status = Status(outcome) if outcome != "error" else describe(exc)[0]
            return status, message_of(exc)
        return Status.BUILD, ""


def _replay(policy, calls) -> None:
    """Run the policy's check on each recorded call, as the wrapper would have, in order."""
    for call in calls:
        policy.check(call.module, call.signature, call.args)


def _is_own(decorator) -> bool:
    from auditor.decorators.support import OwnDecorator

    return isinstance(decorator, OwnDecorator)
