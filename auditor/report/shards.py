"""Shards of a split sweep (`auditor sweep --shard I/N`): which are present, which are missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.core.results import Run


@dataclass(frozen=True)
class ShardCoverage:
    environment: str
    count: int
    present: tuple[int, ...]

    @property
    def missing(self) -> tuple[int, ...]:
        return tuple(i for i in range(1, self.count + 1) if i not in self.present)


def shard_coverage(runs: Sequence[Run]) -> tuple[ShardCoverage, ...]:
    """One entry per environment and shard count among sharded runs, in input order."""
    seen: dict[tuple[str, int], set[int]] = {}
    for run in runs:
        if not run.info.shard:
            continue
        index, _, count = run.info.shard.partition("/")
        seen.setdefault((run.info.environment, int(count)), set()).add(int(index))
    return tuple(ShardCoverage(env, count, tuple(sorted(present))) for (env, count), present in seen.items())
