"""Decorators under audit: vLLM's `support_torch_compile` and variants of its positional check.

Public API:

* `get_policy(name) -> Decorator`: `legacy` (vLLM's check as shipped),
  `fixed`, `fixed-no-config-skip`, `vllm` (vLLM's real decorator, needs vllm),
  `external:MODULE:ATTR`. ValueError for an unknown name.
* `decorated(cls, decorator, dynamic_arg_dims=None)`: context manager that
  decorates `cls` in place, yields it and restores it exactly on exit.
* `decorate(cls, decorator, dynamic_arg_dims=None) -> cls`: decorate in place
  (no restore); raises `DecorateError` when the decorator rejects the class.
* `classify_failure(exc, decorator) -> str`: "decorate-error", "refused",
  "check-error" or "error".
* `support_torch_compile(cls=None, *, dynamic_arg_dims=None, policy="legacy",
  compile_mode="none", backend="inductor")`: the project's copy of vLLM's
  decorator with a pluggable `CheckPolicy`.
* `Decorator`, `CheckPolicy`: the two plug-in interfaces (see interface.py);
  `OwnDecorator` (the project's decorator with one policy) and
  `ExternalDecorator` (`external:MODULE:ATTR`) are the two kinds of Decorator.
* `VllmUnavailableError` (an ImportError): the `vllm` policy used without vllm.

Example::

    decorator = get_policy("fixed")
    with decorated(LlamaModel, decorator, {"input_ids": 1}) as cls:
        try:
            cls(config)
        except Exception as exc:
            outcome = classify_failure(exc, decorator)
"""

from auditor.decorators.external import ExternalDecorator
from auditor.decorators.interface import (
    CheckPolicy,
    Decorator,
    DynamicArgDims,
    is_refusal,
    refusal,
)
from auditor.decorators.outcome import (
    CHECK_ERROR,
    DECORATE_ERROR,
    ERROR,
    REFUSED,
    DecorateError,
    classify_failure,
    decorate,
)
from auditor.decorators.registry import POLICY_NAMES, get_policy
from auditor.decorators.restore import ClassSnapshot, decorated
from auditor.decorators.support import CompileSettings, OwnDecorator, support_torch_compile
from auditor.decorators.vllm_adapter import VllmUnavailableError

TRANSFORMERS_DYNAMIC_ARG_DIMS: DynamicArgDims = {"input_ids": 1, "inputs_embeds": 1, "position_ids": -1}
"""The dims vLLM's Transformers backend gives the decoder class (batch dim kept, so dim 1)."""

__all__ = [
    "CHECK_ERROR",
    "DECORATE_ERROR",
    "ERROR",
    "POLICY_NAMES",
    "REFUSED",
    "TRANSFORMERS_DYNAMIC_ARG_DIMS",
    "CheckPolicy",
    "ClassSnapshot",
    "CompileSettings",
    "DecorateError",
    "Decorator",
    "DynamicArgDims",
    "ExternalDecorator",
    "OwnDecorator",
    "VllmUnavailableError",
    "classify_failure",
    "decorate",
    "decorated",
    "get_policy",
    "is_refusal",
    "refusal",
    "support_torch_compile",
]
