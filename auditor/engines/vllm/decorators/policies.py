"""The positional-check policies of the project's own decorator, and their names.

`legacy`: vLLM's positional check exactly as shipped, faults included.

Faults kept on purpose (they are what the audit measures):

* the annotation list includes `self`, so each argument is checked against the
  annotation of the parameter *before* it;
* `isinstance` itself raises TypeError for parameterized generics
  (`list[int]`, `Callable[[Tensor], Tensor]`), string annotations (from
  `from __future__ import annotations`) and `typing.Any`.

`fixed`: the positional check as it should have been.

* Arguments are aligned with the parameters after `self`, positional ones
  only, stopping at `*args`.
* An argument is checked only when its own annotation is a plain class, so
  `isinstance` can never raise (no generics, unions, strings; not
  `typing.Any`, which is a class from Python 3.11 on but refuses `isinstance`).
* Annotations that are transformers config classes are not checked: a correct
  config is often not an instance of the annotated class (registered by a
  serving engine, remote code loaded twice, cloudpickled by value).

`fixed-no-config-skip`: `fixed` without the config exemption.

It isolates what the exemption buys: a model type that passes under `fixed`
but is refused here is one whose config is not an instance of its annotation.
"""

from __future__ import annotations

import inspect
import sys
import typing
from typing import Any

from auditor.engines.vllm.decorators.interface import CheckPolicy, refusal


class LegacyPolicy(CheckPolicy):
    name = "legacy"

    def check(self, module: object, signature: inspect.Signature, args: tuple[Any, ...]) -> None:
        annotations = [p.annotation for p in signature.parameters.values()]
        # strict=False: zip stops at the shorter list, as vLLM's plain zip() does.
        for arg, annotation in zip(args, annotations, strict=False):
            if annotation is inspect.Parameter.empty:
                continue
            if not isinstance(arg, annotation):
                raise refusal(module, arg)


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def positional_parameters(signature: inspect.Signature) -> list[inspect.Parameter]:
    """The parameters a positional argument can land in, `self` left out."""
    params = list(signature.parameters.values())
    if params and params[0].kind in _POSITIONAL:
        params = params[1:]  # `self`: the wrapper's args never include it
    positional = []
    for param in params:
        if param.kind not in _POSITIONAL:
            break  # *args and keyword-only: nothing checkable after this
        positional.append(param)
    return positional


def is_plain_class(annotation: object) -> bool:
    """Whether `isinstance(x, annotation)` is a sound check."""
    return (
        annotation is not inspect.Parameter.empty
        and inspect.isclass(annotation)
        and typing.get_origin(annotation) is None
        and annotation is not typing.Any
    )


def is_config_class(annotation: type) -> bool:
    """Whether `annotation` is a transformers config class.

    Looked up in sys.modules rather than imported: if transformers' config
    module is not loaded, no annotation can be one of its subclasses.
    """
    module = sys.modules.get("transformers.configuration_utils")
    base = getattr(module, "PreTrainedConfig", None) or getattr(module, "PretrainedConfig", None)
    return base is not None and issubclass(annotation, base)


class FixedPolicy(CheckPolicy):
    name = "fixed"
    exempt_configs = True

    def check(self, module: object, signature: inspect.Signature, args: tuple[Any, ...]) -> None:
        for arg, param in zip(args, positional_parameters(signature), strict=False):
            if self.checks(param.annotation) and not isinstance(arg, param.annotation):
                raise refusal(module, arg)

    def checks(self, annotation: object) -> bool:
        """Whether an argument annotated `annotation` is checked at all."""
        if not is_plain_class(annotation):
            return False
        return not (self.exempt_configs and is_config_class(annotation))


class FixedNoConfigSkipPolicy(FixedPolicy):
    name = "fixed-no-config-skip"
    exempt_configs = False


CHECK_POLICIES: dict[str, type[CheckPolicy]] = {
    policy.name: policy for policy in (LegacyPolicy, FixedPolicy, FixedNoConfigSkipPolicy)
}


def check_policy(policy: str | CheckPolicy) -> CheckPolicy:
    """A CheckPolicy from its name, or the policy itself; ValueError for an unknown name."""
    if isinstance(policy, CheckPolicy):
        return policy
    try:
        return CHECK_POLICIES[policy]()
    except (KeyError, TypeError):
        valid = ", ".join(CHECK_POLICIES)
        raise ValueError(f"unknown check policy {policy!r}; valid: {valid}") from None
