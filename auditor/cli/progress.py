"""ProgressDisplay on long sweeps: a bar with per-status counts and an ETA on a terminal,
plain periodic lines otherwise (CI logs)."""

from __future__ import annotations

import sys
import time
from collections import Counter

from auditor.core.outcome import Outcome, outcome
from auditor.core.results import Result


class ProgressDisplay:
    def __init__(self, total: int, *, interval: float = 15.0, stream=None) -> None:
        self.total = total
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.stream = stream or sys.stderr
        self.interval = interval
        self._start = self._last = time.monotonic()
        self._bar = None
        if self.stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="model", file=self.stream, dynamic_ncols=True)

    def update(self, model_type: str, results: list[Result]) -> None:
        self.done += 1
        # A model type counts once, under its worst status across its rows.
        self.counts[_headline(results)] += 1
        if self._bar is not None:
            self._bar.set_postfix_str(self.summary(), refresh=False)
            self._bar.update(1)
        elif time.monotonic() - self._last >= self.interval or self.done == self.total:
            self._last = time.monotonic()
            print(f"[{self.done}/{self.total}] {self.summary()} · eta {self._eta()}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def summary(self) -> str:
        """Model types per headline status, most common first."""
        return " ".join(f"{status}={count}" for status, count in self.counts.most_common())

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def _eta(self) -> str:
        if not self.done:
            return "?"
        rate = (time.monotonic() - self._start) / self.done
        return f"{rate * (self.total - self.done):.0f}s"


def _headline(results: list[Result]) -> str:
    if not results:
        return "none"
    # A row that fails by design (the by-reference pickle of remote code) documents a known bug;
    # it does not make the model type's headline: the first finding does, else its first row (a
    # gate that does not apply to the type, skipped, does not hide that it built and passed).
    bad = [r for r in results if outcome(r.status, r.extras) is Outcome.FINDING]
    return (bad[0] if bad else results[0]).status.value
