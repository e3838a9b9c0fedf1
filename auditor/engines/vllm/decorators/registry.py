"""Policy names -> decorators under audit.

Names: `legacy`, `fixed`, `fixed-no-config-skip` (the project's decorator with
that check), `external:MODULE:ATTR` (any factory with vLLM's calling convention),
and the short names serving engines register for their own decorators (`vllm`,
registered by auditor.engines: this layer knows no engine).
"""

from __future__ import annotations

from auditor.engines.vllm.decorators.external import PREFIX, ExternalDecorator
from auditor.engines.vllm.decorators.interface import Decorator
from auditor.engines.vllm.decorators.policies import CHECK_POLICIES

# Short name -> "external:MODULE:ATTR"; results show the short name.
ALIASES: dict[str, str] = {}


def register_alias(name: str, spec: str) -> None:
    """Let `name` stand for the external decorator `MODULE:ATTR` (`spec`): how an engine
    makes its own decorator a policy."""
    ALIASES[name] = PREFIX + spec


def policy_names() -> tuple[str, ...]:
    """The valid names, as an unknown one's error lists them."""
    return (*CHECK_POLICIES, *ALIASES, PREFIX + "MODULE:ATTR")


def get_policy(name: str) -> Decorator:
    """The decorator a policy name stands for.

    Raises ValueError, listing the valid names, for an unknown or malformed
    name; ImportError when an external module cannot be imported. An engine's
    policy (`vllm`) resolves without the engine installed; decorating with it
    then raises the engine's ImportError (VllmUnavailableError).
    """
    if name in CHECK_POLICIES:
        from auditor.engines.vllm.decorators.support import (
            OwnDecorator,  # needs torch: only when a policy is used
        )

        return OwnDecorator(name)
    return _external(name)


def validate_policy(name: str) -> None:
    """What `get_policy(name)` would refuse, without making the project's decorator (which needs
    torch): the sweep refuses a bad name before importing it."""
    if name not in CHECK_POLICIES:
        _external(name)


def _external(name: str) -> Decorator:
    spec = ALIASES.get(name, name)
    if isinstance(spec, str) and spec.startswith(PREFIX):
        return ExternalDecorator(spec[len(PREFIX):], name=name)
    raise ValueError(f"unknown policy {name!r}; valid: {', '.join(policy_names())}")
