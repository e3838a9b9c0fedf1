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

from auditor.core.classifier import Phase, classify
from auditor.core.messages import signature_of
from auditor.core.results import Result
from auditor.core.status import Failure, Status
from auditor.engines.vllm.encoders import vllm_encoders
from auditor.models.components import Component, find_components
from auditor.models.construction_log import ConstructionLog, Recording, recording


@dataclass(frozen=True)
class PolicyVerdict:
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


JOINT = "decoder+encoders"
# vLLM's error for a multimodal model without encoders under compile_mm_encoder
# (transformers/multimodal.py:928-937), word for word.
NO_ENCODERS = ("ValueError: Unable to infer any encoder classes from the model. You must either: update the model "
               "so that https://huggingface.co/docs/transformers/en/main_classes/model#transformers.PreTrainedModel."
               "get_encoder can detect the encoders correctly, or remove 'compile_mm_encoder'.")


def verdicts(config, model, policies: Sequence[str], shared_build: bool = True,
             log: ConstructionLog | None = None) -> Iterator[PolicyVerdict]:
    """Build `config` on the meta device under each policy: the decoder alone (vLLM's default),
    and, for a multimodal config, the decoder and every encoder class together
    (`decoder+encoders`: vLLM with `compile_mm_encoder`, transformers/multimodal.py:921-945).

    `model` is the plain meta build of `config`, used to find the components; `log`, the
    ConstructionLog of that build, spares the recorded build where it can stand in for it.
    """
    from auditor.engines.vllm.decorators.registry import get_policy

    components = find_components(model)
    decoder = components.items[0]
    try:
        encoders, lookup_error = vllm_encoders(model), None
    except Exception as exc:  # vLLM catches only TypeError and ValueError: the model stops there
        encoders, lookup_error = {}, classify(exc)
    decorators = [get_policy(name) for name in policies]
    record = None
    start = time.perf_counter()
    if shared_build and any(_is_own(d) for d in decorators):
        classes = [decoder.cls, *(encoders or {}).values()]
        record = log.recording(classes) if log is not None else None
        if record is None:
            record = _record(config, classes)  # None: fall back to a build per policy
    # The shared build's time is charged to the first row, so the rows add up to the check's cost.
    for decorator in decorators:
        status, message = _verdict(config, decoder, decorator, record)
        yield PolicyVerdict(decoder.name, decoder.cls.__name__, decorator.name, status, message,
                      time.perf_counter() - start, components.note)
        start = time.perf_counter()
        if encoders is None:
            continue
        if lookup_error is not None:
            status, message = lookup_error.status, lookup_error.message
        else:
            status, message = _joint_verdict(config, decoder, encoders, decorator, record)
        names = ", ".join(f"{m}: {cls.__name__}" for m, cls in encoders.items())
        yield PolicyVerdict(JOINT, f"{decoder.cls.__name__} + {names or 'no encoder'}", decorator.name, status,
                      message, time.perf_counter() - start, components.note)
        start = time.perf_counter()


def component_names(model) -> list[str]:
    """The components `verdicts` reports on for `model`: the decoder, and for a multimodal
    config the joint cell."""
    from auditor.engines.vllm.gates import is_multimodal

    return ["decoder", JOINT] if is_multimodal(model.config) else ["decoder"]


def _joint_verdict(config, decoder: Component, encoders: dict, decorator, record: Recording | None):
    """vLLM's order: the decoder decorated, then no encoder is an error, then each distinct
    encoder class decorated (dims inferred), then one build where the first refusal wins."""
    import contextlib

    from auditor.engines.vllm.decorators.restore import decorated
    from auditor.models.meta import build_on_meta

    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(decorated(decoder.cls, decorator, decoder.dynamic_arg_dims))
            if not encoders:
                return Status.DECORATE_ERROR, NO_ENCODERS
            classes = [cls for cls in dict.fromkeys(encoders.values()) if cls is not decoder.cls]
            for cls in classes:
                stack.enter_context(decorated(cls, decorator, None))
            if record is None or not _is_own(decorator):
                build_on_meta(config)
            else:
                _replay(decorator.policy, record.order)  # the decoder's and the encoders' calls, in order
    except Exception as exc:
        failure: Failure = classify(exc, Phase.DECORATED, decorator_files=decorator.source_files())
        return failure.status, failure.message
    return Status.BUILD, ""


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
    from auditor.engines.vllm.decorators.restore import decorated
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
    from auditor.engines.vllm.decorators.support import OwnDecorator

    return isinstance(decorator, OwnDecorator)

