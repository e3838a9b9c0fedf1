"""The atlas's derived tables, by the report layer's rules: runs in, records out (pure).

The runs of one lineage (auditor.atlas.keys: the same torch, Python, engines and checks) and one
transformers are one environment of the grid: their rows are read together, the newest run's
first, so that the matrix's cell rule (the first row read decides) lets a later sweep of a type
decide its cells. Each environment's verdicts are auditor.report.serve's; what changed from one
release to the next of a lineage is auditor.report.changes's one change model, with its counts.
Nothing here judges a row or a type itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from auditor.atlas.store import StoredRun, environment_id
from auditor.core.repro import sweep_command
from auditor.core.results import Run
from auditor.report.changes import Changes, changes
from auditor.report.serve import ServeVerdict, verdicts


@dataclass(frozen=True)
class Environment:
    """One column of one lineage: the runs of one transformers, merged."""

    env_id: str
    lineage: str
    transformers: str
    run: Run


def environments(stored: Iterable[StoredRun]) -> list[Environment]:
    """One Environment per lineage and transformers, its runs' rows newest first; in lineage, then
    release order."""
    from packaging.version import InvalidVersion, Version

    groups: dict[tuple[str, str], list[StoredRun]] = {}
    for found in stored:
        groups.setdefault((found.key.lineage, environment_id(found.key)), []).append(found)
    merged = []
    for (lineage, env_id), runs in groups.items():
        runs = sorted(runs, key=lambda s: -s.seq)
        newest = runs[0].run
        rows = tuple(row for s in runs for row in s.run.results)
        merged.append(Environment(env_id, lineage, newest.info.transformers,
                                  Run(info=newest.info, results=rows, path=newest.path)))

    def order(env: Environment):
        try:
            return (env.lineage, 0, Version(env.transformers))
        except InvalidVersion:
            return (env.lineage, 1, Version("0"))

    return sorted(merged, key=order)


def derived_tables(stored: Iterable[StoredRun]) -> dict[str, list[tuple]]:
    """The records of `engine_verdicts`, `changes` and `release_changes` (auditor.atlas.store)."""
    envs = environments(stored)
    tables: dict[str, list[tuple]] = {"engine_verdicts": [], "changes": [], "release_changes": []}
    for env in envs:
        tables["engine_verdicts"] += [verdict_record(env, v) for v in verdicts([env.run])]
    for before, after in consecutive(envs):
        found = changes(before.run, after.run)
        tables["changes"] += change_records(before, after, found)
        tables["release_changes"] += count_records(before, after, found)
    return tables


def consecutive(envs: Sequence[Environment]) -> list[tuple[Environment, Environment]]:
    return [(a, b) for a, b in zip(envs, envs[1:], strict=False) if a.lineage == b.lineage]


def release_of(engine, own: bool) -> tuple[str, bool]:
    """The engine release a verdict answers for, and whether it is the emulation's: the installed
    release where its own code ran, the followed one otherwise (as the verdict line labels it)."""
    return (engine.version, False) if own else (engine.follows, True)


def verdict_record(env: Environment, v: ServeVerdict) -> tuple:
    release, emulated = release_of(v.engine, v.own)
    repro = sweep_command(v.model_type, v.gate, env.run.info.repeat) if v.gate else ""
    return (env.env_id, env.lineage, v.model_type, v.engine.name, v.engine.title, release, emulated,
            v.serves.value, v.path, v.gate, v.status.value if v.status else "", v.signature if v.gate else "",
            v.fault if v.gate else "", v.text, repro)


def change_records(before: Environment, after: Environment, found: Changes) -> list[tuple]:
    records = []
    for engine in found.engines:
        release, emulated = _engine_release(after.run, engine.name)
        base = (after.env_id, before.env_id, after.lineage, engine.name, release, emulated)
        for kind in ("lost", "gained", "moved", "undecided"):
            records += [(*base, kind, c.model_type, c.before, c.after, c.why, c.gate, c.fault, c.cause, c.drift,
                         c.repro) for c in getattr(engine, kind)]
        records += [(*base, "new", t, "", "served" if t in engine.new_served else "not served", "new type", "", "",
                     "", "", "") for t in engine.new_types]
        records += [(*base, "removed", t, "", "", "removed", "", "", "", "", "") for t in engine.removed_types]
    return records


def count_records(before: Environment, after: Environment, found: Changes) -> list[tuple]:
    records = []
    for engine in found.engines:
        release, emulated = _engine_release(after.run, engine.name)
        records.append((after.env_id, before.env_id, after.lineage, engine.name, engine.title, release, emulated,
                        engine.compared, engine.line, len(engine.lost), len(engine.gained), len(engine.moved),
                        len(engine.undecided), ",".join(engine.new_types), ",".join(engine.new_served),
                        ",".join(engine.removed_types)))
    return records


def _engine_release(run: Run, name: str) -> tuple[str, bool]:
    """The release an engine's changes answer for in `run` (auditor.report.changes's own choice:
    the installed release, else the followed one)."""
    engine = next(e for e in run.info.engines if e.name == name)
    return release_of(engine, engine.installed)
