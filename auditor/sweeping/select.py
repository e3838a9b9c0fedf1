"""The select step: the model types a sweep runs, from the registry, plugins and --remote-code."""

from __future__ import annotations

import shlex

from auditor.core.errors import InputError
from auditor.sweeping.events import SweepEvents
from auditor.sweeping.options import flags
from auditor.sweeping.plan import SweepPlan
from auditor.sweeping.validate import checkpoint_cases, remote_cases, saved_types


def select(plan: SweepPlan, events: SweepEvents) -> list:
    """The ModelCases of the request's selection and shard, its plugins loaded first; InputError
    for a selection that names nothing known, or that --exclude leaves empty (a shard may be
    empty: a CI matrix wider than the selection; so may a selection --allow-absent took all of)."""
    from auditor.models import cases

    request = plan.request
    try:
        cases.load_plugins(plan.settings.plugins)
        known = cases.discover()
        absent: list[str] | None = [] if request.allow_absent else None
        # Types another run saved for the weights check that this release lacks: their rows say type-removed.
        gone = [name for name in saved_types(request.weights_from) if name not in {c.model_type for c in known}]
        known += [cases.ModelCase(name, source="saved") for name in gone]
        # --models may name a checkpoint's row too (the command that sweeps one of its cells again).
        checkpoints = checkpoint_cases(request.checkpoints)
        if request.models:
            selected = cases.select([*known, *checkpoints], list(request.models), list(request.exclude), absent=absent)
        else:
            selected = [] if request.remote_code or checkpoints else cases.select(known, (), list(request.exclude))
            selected += checkpoints
        if absent:
            events.note(f"Not in this transformers (--allow-absent): {', '.join(absent)}.")
        selected += remote_cases(request.remote_code)
        if not selected and not absent:  # a release without the types asked for (--allow-absent) sweeps none
            given = shlex.join(flags(models=request.models, exclude=request.exclude))
            raise InputError(f"the selection is empty: {given} leaves none of the {len(known)} model types")
        if request.shard:
            selected = cases.shard(selected, *cases.parse_shard(request.shard))
    except cases.SelectionError as exc:
        raise InputError(str(exc)) from None
    events.note(f"Found {len(known) - len(gone)} model types; {len(selected)} selected.")
    return selected
