"""Policy names -> decorators under audit.

Names: `legacy`, `fixed`, `fixed-no-config-skip` (the project's decorator with
that check), `vllm` (shorthand for vLLM's real decorator through the adapter),
and `external:MODULE:ATTR` (any factory with vLLM's calling convention).
"""

from __future__ import annotations

from auditor.decorators.external import PREFIX, ExternalDecorator
from auditor.decorators.interface import Decorator
from auditor.decorators.policies import CHECK_POLICIES
from auditor.decorators.support import OwnDecorator

VLLM_SPEC = "auditor.decorators.vllm_adapter:support_torch_compile"
ALIASES = {"vllm": PREFIX + VLLM_SPEC}  # results show the short name
POLICY_NAMES = (*CHECK_POLICIES, *ALIASES, PREFIX + "MODULE:ATTR")


def get_policy(name: str) -> Decorator:
    """The decorator a policy name stands for.

    Raises ValueError, listing the valid names, for an unknown or malformed
    name; ImportError when an external module cannot be imported. The `vllm`
    policy resolves without vLLM installed; decorating with it then raises
    VllmUnavailableError (an ImportError).
    """
    if name in CHECK_POLICIES:
        return OwnDecorator(name)
    spec = ALIASES.get(name, name)
    if isinstance(spec, str) and spec.startswith(PREFIX):
        return ExternalDecorator(spec[len(PREFIX):], name=name)
    raise ValueError(f"unknown policy {name!r}; valid: {', '.join(POLICY_NAMES)}")
