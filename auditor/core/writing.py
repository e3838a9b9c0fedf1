"""Writing results.jsonl (its format, reading and repair: auditor.core.results): the header, then
one unit per model type, each in one unbuffered write followed by fsync, so that whatever cuts the
file short costs at most the unit being written."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from auditor.core.results import Result, RunInfo

# Test-only seam, read by ResultsWriter alone: pause this many seconds in the middle of writing
# each model type's unit, so that a fault test can kill the sweep while a unit is half written.
PAUSE_ENV = "AUDITOR_TEST_WRITE_PAUSE"


class ResultsWriter:
    """Writes results.jsonl: the header, then one unit per model type (its rows and its
    completion record), each in one unbuffered write followed by fsync.

    An OSError (a full disk, a file size limit) propagates; what was written of the unit then is
    a torn tail, which readers leave out and `repair` takes out before the file is resumed."""

    def __init__(self, path: Path, info: RunInfo, *, append: bool = False) -> None:
        self.path = path
        self._file = path.open("ab" if append else "wb", buffering=0)
        if not append:
            self._emit(_line(info.to_json()))

    def write_type(self, model_type: str, rows: Sequence[Result]) -> None:
        """All rows of one model type, then its completion record, as one unit."""
        done = {"kind": "done", "model_type": model_type, "rows": len(rows)}
        self._emit("".join(_line(r.to_json()) for r in rows) + _line(done), pause=True)

    def write_all(self, results: Iterable[Result]) -> None:
        """Rows of any model types: each run of consecutive rows of one type is a unit."""
        unit: list[Result] = []
        for result in results:
            if unit and result.model_type != unit[0].model_type:
                self.write_type(unit[0].model_type, unit)
                unit = []
            unit.append(result)
        if unit:
            self.write_type(unit[0].model_type, unit)

    def _emit(self, text: str, pause: bool = False) -> None:
        data = text.encode("utf-8")
        seconds = float(os.environ.get(PAUSE_ENV) or 0) if pause else 0.0
        if seconds:
            # Cut after the unit's first whole row and one byte of the next, whatever the rows'
            # sizes (a build row with its config fingerprint can be half the unit): a reader then
            # sees both a torn last line and rows without their completion record.
            first = data.find(b"\n") + 1
            cut = first + 1 if 0 < first < len(data) - 1 else len(data) // 2
            self._write(data[:cut])
            os.fsync(self._file.fileno())
            time.sleep(seconds)
            data = data[cut:]
        self._write(data)
        os.fsync(self._file.fileno())

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._file.write(view)
            view = view[written:]

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _line(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=False, default=str) + "\n"
