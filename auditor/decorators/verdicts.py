"""What each decorator policy makes of each component of one model's build.

`verdicts(config, model, policies)` is the decorate check's core, shared with the pickle
check's far side (which runs it on a config that arrived by value). Policies of the project's
own decorator share one recorded build (auditor.models.construction_log): each policy's check
is replayed on the components' recorded `__init__` calls. External decorators are opaque, so
each gets a real build per component.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from auditor.core.results import Result
from auditor.core.status import Failure, Phase, Status, classify, signature_of
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
    from auditor.decorators.registry import get_policy

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
    from auditor.decorators.restore import decorated
    from auditor.models.meta import build_on_meta

    try:
        with decorated(component.cls, decorator, component.dynamic_arg_dims):
            if record is None or not _is_own(decorator):
                build_on_meta(config)
            else:
                _replay(decorator.policy, record.calls.get(component.cls, []))
    except Exception as exc:
        failure: Failure = classify(exc, Phase.DECORATED, decorator_files=decorator.source_files())
        return failure.status, failure.message
    return Status.BUILD, ""


def _replay(policy, calls) -> None:
    """Run the policy's check on each recorded call, as the wrapper would have, in order."""
    for call in calls:
        policy.check(call.module, call.signature, call.args)


def _is_own(decorator) -> bool:
    from auditor.decorators.support import OwnDecorator

    return isinstance(decorator, OwnDecorator)

