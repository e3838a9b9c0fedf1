"""The `decorate` check: the meta build with each component class under each decorator policy.

One row per (model type, component, policy), with the decorator's verdict: `build`,
`refused` (its own TypeError), `check-error` (its check broke), `decorate-error` (the class
could not be decorated), or the plain build's status when the model fails without any
decorator. Policies of the project's own decorator share one recorded build (see
recording.py); external decorators are opaque, so each gets a real build per component.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from auditor.checks import register
from auditor.checks.interface import CaseContext, Check, Failure, Options
from auditor.core.results import Result, Status
from auditor.core.status import describe, message_of, signature_of
from auditor.models.cases import ModelCase
from auditor.models.components import Component, find_components
from auditor.models.construction_log import ConstructionLog, Recording, recording


@dataclass(frozen=True)
class Verdict:
    """What one decorator policy made of one component's build."""

    component: str
    cls_name: str
    policy: str
    status: Status
    message: str
    seconds: float
    note: str = ""

    def result(self, model_type: str, check: str) -> Result:
        return Result(
            model_type, check, self.status, component=self.component, policy=self.policy,
            message=self.message or self.cls_name,
            signature=signature_of(self.message) if self.message else "",
            seconds=self.seconds,
            extras={"class": self.cls_name, **({"note": self.note} if self.note else {})},
        )


def verdicts(config, model, policies: Sequence[str], shared_build: bool = True,
             log: ConstructionLog | None = None) -> Iterator[Verdict]:
    """Build `config` on the meta device under each policy, for each component of `model`.

    `model` is the plain meta build of `config`, used to find the components; `log`, the
    ConstructionLog of that build, spares the recorded build where it can stand in for it.
    """
    from auditor.decorators import get_policy

    components = find_components(model)
    decorators = [get_policy(name) for name in policies]
    record = None
    start = time.perf_counter()
    if shared_build and any(_is_own(d) for d in decorators):
        classes = [component.cls for component in components.items]
        record = log.recording(classes) if log is not None else None
        if record is None:
            record = _record(config, classes)  # None: fall back to a build per policy
    # The shared build's time is charged to the first row, so the rows add up to the check's cost.
    for decorator in decorators:
        for component in components.items:
            status, message = _verdict(config, component, decorator, record)
            yield Verdict(component.name, component.cls.__name__, decorator.name, status, message,
                          time.perf_counter() - start, components.note)
            start = time.perf_counter()


@register
class DecorateCheck(Check):
    name = "decorate"

    def run(self, case: ModelCase, context: CaseContext) -> Iterator[Result]:
        plain = context.plain_failure()
        if plain is not None:
            yield from self.failed_rows(case, context.options, plain)
            return
        options = context.options
        for verdict in verdicts(context.config(), context.model(), options.policies, options.shared_policy_build,
                                context.constructions()):
            yield verdict.result(case.model_type, self.name)

    def failed_rows(self, case: ModelCase, options: Options, failure: Failure) -> list[Result]:
        # Without a model there are no components to find: the decoder stands for them all.
        return [Result(case.model_type, self.name, failure.status, component="decoder", policy=policy,
                       message=failure.message, signature=failure.signature) for policy in options.policies]


def _record(config, classes: list[type]) -> Recording | None:
    """The components' __init__ calls during one build, or None if that build fails.

    Weight initialisation is skipped (transformers' `no_init_weights`): it cannot change the
    arguments a component is built with, and it is a third of a meta build's time.
    """
    from auditor.models.meta import build_on_meta, no_init_weights

    try:
        with recording(classes) as record, no_init_weights():
            build_on_meta(config)
    except Exception:
        return None
    return record


def _verdict(config, component: Component, decorator, record: Recording | None) -> tuple[Status, str]:
    from auditor.decorators import DecorateError, classify_failure, decorated
    from auditor.models.meta import build_on_meta

    try:
        with decorated(component.cls, decorator, component.dynamic_arg_dims):
            if record is None or not _is_own(decorator):
                build_on_meta(config)
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
