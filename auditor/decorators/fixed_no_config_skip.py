"""The `fixed-no-config-skip` policy: `fixed` without the config exemption.

It isolates what the exemption buys: a model type that passes under `fixed`
but is refused here is one whose config is not an instance of its annotation.
"""

from __future__ import annotations

from auditor.decorators.fixed import FixedPolicy


class FixedNoConfigSkipPolicy(FixedPolicy):
    name = "fixed-no-config-skip"
    exempt_configs = False
