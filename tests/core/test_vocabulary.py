"""The status vocabulary is defined once (auditor.core.status); its other appearances follow it."""

from __future__ import annotations

import re
from pathlib import Path

from auditor.core.status import DESCRIPTIONS, Status
from auditor.report.statuses import STYLES, style

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_statuses() -> dict[str, str]:
    """The README's table under `### Statuses`: status -> meaning."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Statuses", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \| (.+?) \|$", section, flags=re.M)
    return dict(rows)


def test_every_status_has_a_description():
    assert set(DESCRIPTIONS) == set(Status)


def test_the_report_styles_exactly_the_statuses_and_describes_them_as_defined():
    assert set(STYLES) == {s.value for s in Status}
    assert all(style(s.value).description == s.description for s in Status)


def test_the_readme_table_is_the_vocabulary():
    table = _readme_statuses()
    assert len(table) >= 10, "the README's status table was not found"
    assert table == {s.value: s.description for s in Status}
