"""`SideSweep`: what the sweep of one side gets, as one record passed whole.

upgrade-check's two sides, each release of `versions` and the atlas, each step of `bisect` and
each engine's venv of `sweep --engine` run `auditor sweep` in a venv of their own. What that
sweep is given is one `SideSweep`, a field per option declared with `sides=True` in options.py
(its help says what it is), spelled as the sweep's command line by `flags()`: a command builds
it once from its input, each layer below fills in what it owns (a side's run directory and
label, its weights folder) with `dataclasses.replace`, and none of them names the options it
passes on. An option added to the sides is one declaration there; no layer can drop it.

Cheap to import, as options.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from auditor.sweeping.options import BY_NAME, Kind, given_names, side_flags

# The order a side's command line spells them: where the run goes first, then the selection,
# the checks, the limits, the executor, the folders read or written. (Not the declarations'
# order, which is the parser's and the resume command's; the sides' command lines keep theirs.)
ORDER = ("output", "label", "resume", "overwrite", "models", "exclude", "checks", "policies", "jobs", "timeout",
         "allow_absent", "executor", "ray_address", "shard", "checkpoints", "weights_save", "weights_from")

_ANNOTATIONS = {Kind.NAMES: "tuple[str, ...]", Kind.PATHS: "tuple[str, ...]", Kind.LIST: "tuple[str, ...] | None",
                Kind.SWITCH: "bool", Kind.INT: "int | None", Kind.FLOAT: "float | None", Kind.TEXT: "str | None",
                Kind.PATH: "Path | None"}


def _empty(kind: Kind) -> Any:
    """A field's default: not given, so not spelled (the side's sweep keeps its own default)."""
    return () if kind in (Kind.NAMES, Kind.PATHS) else False if kind is Kind.SWITCH else None


def _flags(self) -> list[str]:
    """The side's `auditor sweep` options, in ORDER; what is not given is left out."""
    return side_flags(**{name: getattr(self, name) for name in ORDER})


SideSweep = dataclasses.make_dataclass(
    "SideSweep", [(name, _ANNOTATIONS[BY_NAME[name].kind], dataclasses.field(default=_empty(BY_NAME[name].kind)))
                  for name in ORDER], frozen=True, namespace={"flags": _flags})
SideSweep.__module__ = __name__
SideSweep.__doc__ = """The options of one side's `auditor sweep`, one field per option declared with
`sides=True`. Lists the command line takes repeated (models, exclude, checkpoints) hold what was
given, item by item; comma-separated lists (checks, policies) hold their names; None, (), False:
not given. `flags()` spells it."""

def side_sweep(sweep: SideSweep | None = None, **values) -> SideSweep:
    """`sweep` (default: nothing given) with these options; a list may be given as text or as
    an iterable (a comma-separated one split into names), None keeps the sweep's default. An
    option that does not go to the sides is an InputError."""
    from auditor.core.errors import InputError

    unknown = sorted(set(values) - set(ORDER))
    if unknown:
        raise InputError(f"not options of a side's sweep: {', '.join(unknown)}; known: {', '.join(ORDER)}")
    return dataclasses.replace(sweep or SideSweep(), **{name: _value(name, value) for name, value in values.items()})


def _value(name: str, value: Any) -> Any:
    kind = BY_NAME[name].kind
    if value is None:
        return _empty(kind)
    if kind in (Kind.NAMES, Kind.PATHS):
        return tuple(str(item) for item in ([value] if isinstance(value, str) else value))
    if kind is Kind.LIST:
        return given_names(BY_NAME[name], value)
    return value


def side_sweep_of(args, names: tuple[str, ...]) -> SideSweep:
    """The sides' sweep a parsed command line gives: its options `names` (those its
    `add_side_arguments` declared)."""
    return side_sweep(**{name: getattr(args, name) for name in names})
