"""The lowest and highest transformers release where each cell passes: a model registry's min/max.

vLLM's tests/models/registry.py keeps `min_transformers_version` / `max_transformers_version`
per architecture by hand; `auditor versions` computes the same per model type and column from
one sweep per release, and every merged report whose environments are transformers releases
shows it (`release_ranges`). Each cell is judged by the one cell rule (auditor.core.outcome.judge):
it passes where its outcome is a pass, or flaky (it failed with a status the machine can cause and
passed on a rerun: the release does build it). Between the two ends a cell may fail in some
release: those are listed with the cell's label, so a range is never read as unbroken when it is not. Pure: cells in, rows and text out.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.version import Version

from auditor.core.outcome import CellVerdict, Outcome
from auditor.core.results import Run

FIELDS = ("model_type", "column", "lowest_pass", "highest_pass", "not_passing_within", "absent_in", "releases")


@dataclass(frozen=True)
class PassRange:
    model_type: str
    column: str
    lowest: str  # "" when it passes in no release
    highest: str
    not_passing: tuple[tuple[str, str], ...]  # (release, status) strictly between lowest and highest
    absent_in: tuple[str, ...]  # releases swept that lack the cell (the type is newer, or was removed)
    releases: tuple[str, ...]  # releases that have the cell

    @property
    def unbroken(self) -> bool:
        """It is in every release swept and passes in each: nothing for a registry to record."""
        return bool(self.lowest) and not self.not_passing and not self.absent_in \
            and self.lowest == self.releases[0] and self.highest == self.releases[-1]

    def row(self) -> dict[str, str]:
        return {"model_type": self.model_type, "column": self.column, "lowest_pass": self.lowest,
                "highest_pass": self.highest,
                "not_passing_within": " ".join(f"{r}:{s}" for r, s in self.not_passing),
                "absent_in": " ".join(self.absent_in), "releases": " ".join(self.releases)}


def pass_ranges(by_release: Mapping[str, Mapping[tuple[str, str], CellVerdict]]) -> list[PassRange]:
    """One PassRange per model type and column seen in any release; `by_release` maps a release to
    its cells, `(model type, column) -> the cell rule's verdict`."""
    releases = sorted(by_release, key=Version)
    keys = sorted({key for cells in by_release.values() for key in cells})
    ranges = []
    for model_type, column in keys:
        present = [(r, by_release[r][(model_type, column)]) for r in releases if (model_type, column) in by_release[r]]
        passing = [r for r, verdict in present if verdict.outcome in _PASSING]
        lowest, highest = (passing[0], passing[-1]) if passing else ("", "")
        within = tuple((r, verdict.label) for r, verdict in present
                       if passing and Version(lowest) < Version(r) < Version(highest) and verdict.outcome not in _PASSING)
        ranges.append(PassRange(model_type, column, lowest, highest, within,
                                tuple(r for r in releases if (model_type, column) not in by_release[r]),
                                tuple(r for r, _ in present)))
    return ranges


_PASSING = (Outcome.PASS, Outcome.FLAKY)


def release_ranges(runs: Sequence[Run], minimum: int = 2) -> tuple[list[str], list[PassRange]] | None:
    """The releases (oldest first) and the pass ranges of runs made under `minimum` or more
    transformers releases (a release's shards are one group; each cell judged by the cell rule, as
    in the matrix); None when the runs share one transformers or one is not a release."""
    from packaging.version import InvalidVersion

    from auditor.report.matrix import cell_verdicts

    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.info.transformers, []).append(run)
    try:
        releases = sorted(groups, key=Version)
    except InvalidVersion:
        return None
    if len(releases) < minimum:
        return None
    by_release = {release: {(model_type, column): verdict
                            for (_, model_type, column), verdict in cell_verdicts(groups[release]).items()}
                  for release in releases}
    return releases, pass_ranges(by_release)


def ranges_csv(ranges: Sequence[PassRange]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(r.row() for r in ranges)
    return out.getvalue()


def ranges_html(ranges: Sequence[PassRange], releases: Sequence[str]) -> str:
    """A standalone page: one row per model type and column, its pass range and the exceptions."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in
                   ("model type", "column", "lowest pass", "highest pass", "not passing within", "absent in"))
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in (
            r.model_type, r.column, r.lowest or "never passes", r.highest or "",
            ", ".join(f"{rel} ({s})" for rel, s in r.not_passing), ", ".join(r.absent_in))) + "</tr>"
        for r in ranges)
    swept = ", ".join(html.escape(r) for r in sorted(releases, key=Version))
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Pass ranges by transformers release</title>"
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}</style></head><body>\n"
            f"<h1>Lowest and highest transformers release where each cell passes</h1>\n"
            f"<p>Releases swept: {swept}. The matrix of every release is in "
            "<a href=\"report.html\">report.html</a>.</p>\n"
            f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>\n</body></html>\n")
