"""Expected baselines: the failing cells of a run, kept as data, so that a team can say "these
fail upstream; tell me only what is new" (the shape of PyTorch dynamo's ci_expected_accuracy CSVs
and their update_expected.py).

A baseline is a CSV of `model_type,column,status,signature,reason`, one confirmed failure per line
(a finding: not flaky, not skipped, not failing by design). A cell's failure matches its line when
the status and the signature are the same (an empty signature in the file matches any); a
matching failure is `expected` through the outcome rule (auditor.core.outcome), so every gate
passes over it. A listed cell that passes now is fixed: the baseline should be written again.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.outcome import Outcome
from auditor.core.results import Run
from auditor.report.matrix import Matrix, build_matrix

COLUMNS = ("model_type", "column", "status", "signature", "reason")
REASON_WIDTH = 200


class BaselineError(ValueError):
    """A baseline file that is not a CSV of COLUMNS."""


@dataclass(frozen=True)
class Expectation:
    model_type: str
    column: str
    status: str
    signature: str = ""
    reason: str = ""

    def matches(self, status: str, signature: str) -> bool:
        return status == self.status and (not self.signature or signature == self.signature)


@dataclass(frozen=True)
class Baseline:
    entries: tuple[Expectation, ...] = ()
    source: str = field(default="", compare=False)  # its file, as given: reports name it
    _by_cell: dict[tuple[str, str], Expectation] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_cell", {(e.model_type, e.column): e for e in self.entries})

    def entry(self, model_type: str, column: str) -> Expectation | None:
        return self._by_cell.get((model_type, column))

    def lists(self, model_type: str, column: str, status: str, signature: str) -> bool:
        """Whether this failure of this cell is the one the baseline expects."""
        entry = self.entry(model_type, column)
        return entry is not None and entry.matches(status, signature)


def baseline_of(runs: Sequence[Run]) -> Baseline:
    """The confirmed failures (findings) of the runs' matrix, each with its reason: the message's
    first line, cut short."""
    entries = []
    for model_type, col, cell in build_matrix(runs).cells():
        if cell.outcome is Outcome.FINDING:
            reason = (cell.message.splitlines() or [""])[0][:REASON_WIDTH]
            entries.append(Expectation(model_type, col.column, cell.status.value, cell.signature, reason))
    return Baseline(tuple(dict.fromkeys(entries)))


def render_baseline(baseline: Baseline) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows((e.model_type, e.column, e.status, e.signature, e.reason) for e in baseline.entries)
    return out.getvalue()


def parse_baseline(text: str, source: str = "baseline") -> Baseline:
    """The baseline in a CSV's text; BaselineError naming the line otherwise."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(cell.strip() for cell in rows[0]) != COLUMNS:
        raise BaselineError(f"{source}: the first line must be {','.join(COLUMNS)} "
                            "(write one with `auditor baseline RUN -o FILE`)")
    entries = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(COLUMNS) or not row[0].strip() or not row[1].strip() or not row[2].strip():
            raise BaselineError(f"{source}:{number}: expected {len(COLUMNS)} fields "
                                f"(model_type, column and status not empty), got {row!r}")
        entries.append(Expectation(*(cell.strip() for cell in row)))
    return Baseline(tuple(entries))


def read_baseline(path) -> Baseline | None:
    """The baseline in a CSV file; a Baseline or None as it is. InputError when the file cannot
    be read or is not a baseline: bad input, found before any work."""
    if path is None or isinstance(path, Baseline):
        return path
    try:
        parsed = parse_baseline(Path(path).read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise InputError(f"cannot read the expected baseline {path}: {exc.strerror or exc}") from None
    except (BaselineError, UnicodeDecodeError) as exc:
        raise InputError(str(exc)) from None
    return Baseline(parsed.entries, str(path))


def expected_matrix(runs: Sequence[Run], baseline: Baseline | None) -> Matrix:
    """The matrix of the runs, with the failures the baseline lists `expected`: what every report
    of `--expected` renders (the rows themselves are not changed)."""
    if baseline is None:
        return build_matrix(runs)
    return build_matrix(runs, listed=baseline.lists, baseline=baseline.source)


def fixed(baseline: Baseline, matrix: Matrix) -> tuple[Expectation, ...]:
    """The listed cells that pass now: the baseline is out of date for them."""
    passing = {(model_type, col.column) for model_type, col, cell in matrix.cells() if cell.outcome is Outcome.PASS}
    return tuple(e for e in baseline.entries if (e.model_type, e.column) in passing)


def describe(entries: Iterable[Expectation]) -> str:
    return ", ".join(f"{e.model_type} {e.column}" for e in entries)
