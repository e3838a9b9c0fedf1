"""Bisecting a cell: which sweep a step runs, what a step saw, and which release to install next.

A *cell* is a model type and a column (`llama decorate/decoder/legacy`), or a model type alone
("any cell of this type"). Its *state* in one transformers is the status of each of its columns
there (messages ride along for the report; only statuses decide), judged by the one cell rule
(auditor.core.outcome.judge): a cell whose rerun passed reads `flaky`, neither good nor bad, and a
state with a flaky cell is not a measurement (a step skips the commit, a release is skipped); a type
the release does not have is the empty state, `absent`. A bisection knows the state at the good end and looks for the
first release whose state differs from it: like `git bisect`, it keeps the newest release seen
with the good state below the oldest seen with another one, and probes the middle between them.
A release that could not be measured (it would not install, its sweep died) is skipped, as
`git bisect skip` does; when only skipped releases are left between the two, the answer is the
list of candidates. Everything here is a function of recorded states: bisect_run.py installs and sweeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from auditor.core.outcome import FLAKY_LABEL, CellVerdict

# The protocol of `git bisect run`: 0 good, 1 bad, 125 this commit cannot be tested; a code
# above 127 stops the bisection (bad input must not be taken for a bad commit).
GIT_GOOD, GIT_BAD, GIT_SKIP, GIT_ABORT = 0, 1, 125, 128


class BisectError(ValueError):
    """A cell that cannot be bisected: not a column of its check, or the same at both ends."""


@dataclass(frozen=True)
class BisectTarget:
    model_type: str
    column: str = ""  # "" is any cell of the type

    def __str__(self) -> str:
        return f"{self.model_type} {self.column}" if self.column else f"{self.model_type} (any cell)"


@dataclass(frozen=True)
class Entry:
    column: str
    status: str
    message: str = ""


@dataclass(frozen=True)
class State:
    """A cell in one transformers: one entry per column it has, sorted; none when the type is absent."""

    entries: tuple[Entry, ...] = ()

    @property
    def absent(self) -> bool:
        return not self.entries

    def statuses(self) -> dict[str, str]:
        return {e.column: e.status for e in self.entries}

    def same(self, other: State) -> bool:
        return self.statuses() == other.statuses()

    @property
    def flaky(self) -> bool:
        """Whether a cell of it failed and then passed on a rerun: it says neither good nor bad."""
        return any(e.status == FLAKY_LABEL for e in self.entries)

    def describe(self, columns: Collection[str] | None = None) -> str:
        """`absent`, or `column: status (message)` for each column (those in `columns` when given)."""
        shown = [e for e in self.entries if columns is None or e.column in columns]
        if self.absent:
            return "absent (no such model type)"
        if not shown:
            return "absent (no such column)"
        return "; ".join(f"{e.column}: {e.status}" + (f" ({_short(e.message)})" if e.message else "")
                         for e in shown)


def _short(message: str, limit: int = 160) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse_cell(model_type: str, column: str | None) -> BisectTarget:
    if not model_type.strip():
        raise BisectError("name a model type, e.g. `llama decorate/decoder/legacy`")
    return BisectTarget(model_type.strip(), (column or "").strip().strip("/"))


def sweep_selection(cell: BisectTarget, is_policy: Callable[[str], bool]) -> tuple[str, str | None]:
    """The check and the policy the column needs (`decorate/decoder/legacy` -> `decorate`, `legacy`);
    "" and None when the cell is any cell of the type (the caller's choice then), None for a column
    without a policy. A column is check[/component][/policy]: of two parts, the second is a
    policy when `is_policy` says it is one of the sweep's."""
    if not cell.column:
        return "", None
    parts = cell.column.split("/")
    policy = parts[-1] if len(parts) == 3 or (len(parts) == 2 and is_policy(parts[1])) else None
    return parts[0], policy


def cell_state(cells: Mapping[tuple[str, str], CellVerdict], cell: BisectTarget) -> State:
    """The cell's state in one run's cells, `(model type, column) -> the cell rule's verdict`."""
    entries = sorted((Entry(column, v.label, v.row.message or v.row.signature)
                      for (model_type, column), v in cells.items()
                      if model_type == cell.model_type and (not cell.column or column == cell.column)),
                     key=lambda e: e.column)
    return State(tuple(entries))


def changed_columns(a: State, b: State) -> list[str]:
    """The columns whose status differs between two states (one side may lack the column)."""
    sa, sb = a.statuses(), b.statuses()
    return sorted(c for c in sa.keys() | sb.keys() if sa.get(c) != sb.get(c))


@dataclass(frozen=True)
class Bounds:
    """Where the search stands: the newest release with the good state, the oldest with another."""

    last_good: str
    first_bad: str
    candidates: tuple[str, ...]  # the releases the first change may be in: (first_bad,) when found

    @property
    def found(self) -> bool:
        return len(self.candidates) == 1


def bounds(releases: Sequence[str], states: Mapping[str, State | None]) -> Bounds:
    """The search's bounds from what was measured; `states` has the good and bad ends (the first
    and last of `releases`), None for a release that could not be measured."""
    good = states[releases[0]]
    if good is None or states.get(releases[-1]) is None:
        raise BisectError("both ends must have been measured")
    hi = next(i for i, r in enumerate(releases) if states.get(r) is not None and not states[r].same(good))
    lo = max(i for i, r in enumerate(releases[:hi]) if states.get(r) is not None and states[r].same(good))
    return Bounds(releases[lo], releases[hi], tuple(releases[lo + 1: hi + 1]))


def next_probe(releases: Sequence[str], states: Mapping[str, State | None]) -> str | None:
    """The release to measure next: the untried one nearest the middle of the bounds; None when done."""
    outcome = bounds(releases, states)
    lo, hi = releases.index(outcome.last_good), releases.index(outcome.first_bad)
    middle = (lo + hi) / 2
    untried = [i for i in range(lo + 1, hi) if releases[i] not in states]
    if not untried:
        return None
    return releases[min(untried, key=lambda i: (abs(i - middle), i))]


def check_ends(good: State, bad: State, cell: BisectTarget, good_name: str, bad_name: str) -> None:
    """A BisectError when there is nothing to look for: the cell is the same at both ends."""
    if good.same(bad):
        seen = "absent at both" if good.absent else good.describe()
        raise BisectError(f"{cell} does not differ between {good_name} and {bad_name} ({seen}); "
                          "nothing to bisect")


def step_verdict(good: State, state: State | None) -> int:
    """The `git bisect run` exit code of a step: good when the state is the good end's; skip when
    it could not be measured, or a cell of it is flaky (unless the good end's is flaky too)."""
    if state is None or (state.flaky and not state.same(good)):
        return GIT_SKIP
    return GIT_GOOD if state.same(good) else GIT_BAD


def first_bad_commit(git_output: str) -> str | None:
    """The commit `git bisect run` named, from its `<sha> is the first bad commit` line."""
    match = re.search(r"^([0-9a-f]{7,64}) is the first bad commit", git_output, flags=re.MULTILINE)
    return match.group(1) if match else None
