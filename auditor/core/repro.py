"""The command that sweeps one cell again: `auditor sweep --models T --checks C ...`.

One function builds it for every output (the end of a sweep, summary.md, report.html, `auditor
diff`, `auditor gate`, upgrade-check, JUnit): the sweep of the cell's model type and check, with
the flags its run recorded as changing what a cell means (RunInfo.repeat, spelled by the sweep
layer when it wrote the header: auditor.sweeping.resume.repeat_flags).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def sweep_command(model_type: str, column: str, repeat: Sequence[str] | None = ()) -> str:
    """`auditor sweep --models TYPE --checks CHECK <repeat>`; `column` is a matrix column
    (`decorate/decoder/legacy`: its check is the first segment). `repeat` None (a run that did not
    record it) sweeps with the defaults."""
    return shlex.join(["auditor", "sweep", "--models", model_type, "--checks", column.split("/", 1)[0],
                       *(repeat or ())])
