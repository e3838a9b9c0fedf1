"""The status vocabulary is defined once (auditor.core.status); its other appearances follow it
(the docs' status table is generated from it: tests/tooling/test_docs.py)."""

from __future__ import annotations

from auditor.core.status import DESCRIPTIONS, Status
from auditor.report.statuses import STYLES, style


def test_every_status_has_a_description():
    assert set(DESCRIPTIONS) == set(Status)


def test_the_report_styles_exactly_the_statuses_and_describes_them_as_defined():
    assert set(STYLES) == {s.value for s in Status}
    assert all(style(s.value).description == s.description for s in Status)
