"""The sweep's progress line: each finished model type counted once, under its headline status."""

from __future__ import annotations

import io

from auditor.cli.progress import ProgressDisplay
from auditor.core.results import Result
from auditor.core.status import Status


def test_a_type_counts_under_its_first_finding_else_its_first_row():
    stream = io.StringIO()
    progress = ProgressDisplay(3, interval=0, stream=stream)
    built = Result("llama", "build", Status.BUILD)
    not_applicable = Result("llama", "backend", Status.SKIPPED, component="version:video")
    progress.update("llama", [built, not_applicable])  # a gate that does not apply hides nothing
    progress.update("falcon", [built, Result("falcon", "backend", Status.UNSUPPORTED, component="registry")])
    progress.update("bloom", [Result("bloom", "build", Status.SKIPPED)])
    assert progress.counts == {"build": 1, "unsupported": 1, "skipped": 1}
    assert stream.getvalue().splitlines()[-1].startswith("[3/3] ")
