"""Decorators under audit: vLLM's `support_torch_compile` and variants of its positional check.

Public API:

* `get_policy(name) -> Decorator`: `legacy` (vLLM's check as shipped),
  `fixed`, `fixed-no-config-skip`, `external:MODULE:ATTR`, and the names engines
  register (`register_alias`; auditor.engines registers `vllm`, vLLM's real decorator,
  which needs vllm). ValueError for an unknown name.
* `decorated(cls, decorator, dynamic_arg_dims=None)`: context manager that
  decorates `cls` in place, yields it and restores it exactly on exit.
* `decorate(cls, decorator, dynamic_arg_dims=None) -> cls`: decorate in place
  (no restore); raises `DecorateError` when the decorator rejects the class.
* `verdicts(config, model, policies)` (in `auditor.engines.vllm.decorators.verdicts`): each policy's
  verdict on each component of a build; what the decorate check and the far build report.
* `support_torch_compile(cls=None, *, dynamic_arg_dims=None, policy="legacy",
  compile_mode="none", backend="inductor")`: the project's copy of vLLM's
  decorator with a pluggable `CheckPolicy`.
* `Decorator`, `CheckPolicy`: the two plug-in interfaces (see interface.py);
  `OwnDecorator` (the project's decorator with one policy) and
  `ExternalDecorator` (`external:MODULE:ATTR`) are the two kinds of Decorator.

What a failure under a decorator means is judged by the one classifier::

    decorator = get_policy("fixed")
    with decorated(LlamaModel, decorator, {"input_ids": 1}) as cls:
        try:
            cls(config)
        except Exception as exc:
            failure = classify(exc, Phase.DECORATED, decorator_files=decorator.source_files())
"""

from auditor.engines.vllm.decorators.apply import DecorateError, decorate
from auditor.engines.vllm.decorators.external import ExternalDecorator
from auditor.engines.vllm.decorators.interface import CheckPolicy, Decorator, DynamicArgDims, refusal
from auditor.engines.vllm.decorators.registry import get_policy, policy_names, register_alias
from auditor.engines.vllm.decorators.restore import ClassSnapshot, decorated

# The project's decorator needs torch; it is imported on first use (PEP 562), so that resolving a
# policy name, or refusing bad input, never waits for torch.
_LAZY = {"CompileSettings", "OwnDecorator", "support_torch_compile"}


# Every module of this package is the decorator under audit (or its emulation): a failure raised
# in one is the decorator's verdict, never an auditor bug (auditor.core.classifier.auditor_bug_at).
AUDITED = True

__all__ = [
    "POLICY_NAMES",
    "CheckPolicy",
    "ClassSnapshot",
    "CompileSettings",
    "DecorateError",
    "Decorator",
    "DynamicArgDims",
    "ExternalDecorator",
    "OwnDecorator",
    "decorate",
    "decorated",
    "get_policy",
    "policy_names",
    "register_alias",
    "refusal",
    "support_torch_compile",
]


def __getattr__(name: str):
    if name == "POLICY_NAMES":  # computed: engines register their policies after this import
        return policy_names()
    if name in _LAZY:
        from auditor.engines.vllm.decorators import support

        return getattr(support, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
