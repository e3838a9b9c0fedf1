"""The compile decorator under audit, as the layers above engines/ use it.

vLLM's `support_torch_compile` and the variants of its positional check (`legacy`, `fixed`,
`fixed-no-config-skip`, `external:MODULE:ATTR`, and `vllm`, vLLM's own) live with the engine
(auditor.engines.vllm.decorators); SGLang has no decorator of its own. The checks, the sweep's
validation, the far side and bisect ask this module, so that no layer outside engines/ names an
engine's modules (tests/test_layout.py).

* `verdicts(config, model, policies, shared_build=True)`: each policy's verdict on each
  component of a build (the decorate check, the far build, vllm-config).
* `component_names(model)`, `decorated(cls, decorator, dims)`, `DecorateError`.
* `policy_names()`, `validate_policy(name)`, `CHECK_POLICIES` (the project's check variants),
  `ALIASES` (the names engines register).
* `OwnDecorator`, `mark_dynamic_inputs`: the project's decorator, which needs torch (imported on
  first use).
"""

from __future__ import annotations

from auditor.engines.vllm.decorators import DecorateError, Decorator, decorated, policy_names
from auditor.engines.vllm.decorators.policies import CHECK_POLICIES
from auditor.engines.vllm.decorators.registry import ALIASES, validate_policy
from auditor.engines.vllm.decorators.verdicts import component_names, verdicts

_NEEDS_TORCH = {"OwnDecorator": "auditor.engines.vllm.decorators.support",
                "mark_dynamic_inputs": "auditor.engines.vllm.decorators.support"}

__all__ = ["ALIASES", "CHECK_POLICIES", "DecorateError", "Decorator", "component_names", "decorated",
           "policy_names", "validate_policy", "verdicts"]  # and, on first use, OwnDecorator, mark_dynamic_inputs


def __getattr__(name: str):
    if name in _NEEDS_TORCH:
        import importlib

        return getattr(importlib.import_module(_NEEDS_TORCH[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
