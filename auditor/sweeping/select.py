"""The select step: the model types a sweep runs, from the registry, plugins and --remote-code."""

from __future__ import annotations

from auditor.core.errors import InputError
from auditor.sweeping.events import SweepEvents
from auditor.sweeping.plan import SweepPlan
from auditor.sweeping.validate import remote_cases


def select(plan: SweepPlan, events: SweepEvents) -> list:
    """The ModelCases of the request's selection and shard, its plugins loaded first; InputError
    for a selection that names nothing known."""
    from auditor.models import cases

    request = plan.request
    try:
        cases.load_plugins(plan.settings.plugins)
        known = cases.discover()
        selected = [] if request.remote_code and not request.models else cases.select(
            known, list(request.models), list(request.exclude))
        selected += remote_cases(request.remote_code)
        if request.shard:
            selected = cases.shard(selected, *cases.parse_shard(request.shard))
    except cases.SelectionError as exc:
        raise InputError(str(exc)) from None
    events.note(f"Found {len(known)} model types; {len(selected)} selected.")
    return selected
