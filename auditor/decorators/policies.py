"""The named positional-check policies of the project's own decorator."""

from __future__ import annotations

from auditor.decorators.fixed import FixedPolicy
from auditor.decorators.fixed_no_config_skip import FixedNoConfigSkipPolicy
from auditor.decorators.interface import CheckPolicy
from auditor.decorators.legacy import LegacyPolicy

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
