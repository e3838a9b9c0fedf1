"""The atlas's one database file (DIR/atlas.duckdb): what it holds and how runs go in and come back.

Users query it with SQL; the site reads it, never the run folders. Tables:

* `environments`: one row per (transformers, torch, Python minor, installed engines), with
  `release_order`, the place of its transformers among the releases (versions do not sort as text);
* `runs`: one row per run (its key, lineage, where it came from, its header as JSON);
* `rows`: every row of every run, as results.jsonl held it (Result's fields; extras as JSON);
* `engine_verdicts`: one serving engine's verdict on one type in one environment and lineage
  (auditor.report.serve's rule), with the gate that decides it, its cause, fault and repro command;
* `changes`: what changed per engine and type between two consecutive releases of a lineage
  (auditor.report.changes's one change model: lost, gained, moved, undecided, new, removed);
* `release_changes`: per release and engine, that model's counts and its line (`1 lost of 10`),
  the count every report of the night prints.

Views (documented in docs/workflows/atlas.md):

* `verdicts(model_type, engine, engine_release, emulated, transformers, torch, python, verdict,
  gate, cause, fault)`: `verdict` is servable, stops or undecided;
* `first_broken(model_type, engine, engine_release, emulated, broken_in, gate, cause, fault,
  fixed_in)`: per type and engine, the first release that lost its verdict, why, and the first
  release after it that gave it back (NULL while it is still lost).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.atlas.keys import RunKey, key_of
from auditor.core.errors import InputError
from auditor.core.results import Result, Run, RunInfo

DB_FILE = "atlas.duckdb"
SCHEMA_VERSION = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (name VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS environments (
    env_id VARCHAR PRIMARY KEY, transformers VARCHAR, torch VARCHAR, python VARCHAR, engines VARCHAR,
    release_order INTEGER);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, key VARCHAR, request_key VARCHAR, lineage VARCHAR, env_id VARCHAR,
    transformers VARCHAR, torch VARCHAR, python VARCHAR, engines VARCHAR, checks VARCHAR, selection VARCHAR,
    source VARCHAR, swept BOOLEAN, added VARCHAR, seq INTEGER, row_count INTEGER, seconds DOUBLE,
    header VARCHAR);
CREATE TABLE IF NOT EXISTS rows (
    run_id VARCHAR, line INTEGER, model_type VARCHAR, "check" VARCHAR, "column" VARCHAR, component VARCHAR,
    policy VARCHAR, status VARCHAR, fault VARCHAR, message VARCHAR, signature VARCHAR, seconds DOUBLE,
    worker VARCHAR, extras VARCHAR);
CREATE TABLE IF NOT EXISTS engine_verdicts (
    env_id VARCHAR, lineage VARCHAR, model_type VARCHAR, engine VARCHAR, title VARCHAR,
    engine_release VARCHAR, emulated BOOLEAN, verdict VARCHAR, path VARCHAR, gate VARCHAR, status VARCHAR,
    cause VARCHAR, fault VARCHAR, text VARCHAR, repro VARCHAR);
CREATE TABLE IF NOT EXISTS changes (
    env_id VARCHAR, previous_env_id VARCHAR, lineage VARCHAR, engine VARCHAR, engine_release VARCHAR,
    emulated BOOLEAN, kind VARCHAR, model_type VARCHAR, before VARCHAR, after VARCHAR, why VARCHAR,
    gate VARCHAR, fault VARCHAR, cause VARCHAR, drift VARCHAR, repro VARCHAR);
CREATE TABLE IF NOT EXISTS release_changes (
    env_id VARCHAR, previous_env_id VARCHAR, lineage VARCHAR, engine VARCHAR, title VARCHAR,
    engine_release VARCHAR, emulated BOOLEAN, compared INTEGER, line VARCHAR, lost INTEGER, gained INTEGER,
    moved INTEGER, undecided INTEGER, new_types VARCHAR, new_served VARCHAR, removed_types VARCHAR);
"""

_VIEWS = """
CREATE OR REPLACE VIEW verdicts AS
SELECT v.model_type, v.engine, v.engine_release, v.emulated, e.transformers, e.torch, e.python,
       v.verdict, v.gate, v.cause, v.fault
FROM engine_verdicts v JOIN environments e USING (env_id);
CREATE OR REPLACE VIEW first_broken AS
WITH c AS (SELECT c.*, e.transformers, e.release_order FROM changes c JOIN environments e USING (env_id)),
lost AS (
    SELECT model_type, engine, engine_release, emulated, min(release_order) AS broken_order,
           arg_min(transformers, release_order) AS broken_in, arg_min(gate, release_order) AS gate,
           arg_min(cause, release_order) AS cause, arg_min(fault, release_order) AS fault
    FROM c WHERE kind = 'lost' GROUP BY model_type, engine, engine_release, emulated)
SELECT l.model_type, l.engine, l.engine_release, l.emulated, l.broken_in, l.gate, l.cause, l.fault,
       (SELECT arg_min(g.transformers, g.release_order) FROM c g
        WHERE g.kind = 'gained' AND g.model_type = l.model_type AND g.engine = l.engine
          AND g.engine_release = l.engine_release AND g.emulated = l.emulated
          AND g.release_order > l.broken_order) AS fixed_in
FROM lost l;
"""

DERIVED = ("engine_verdicts", "changes", "release_changes")


def connect(path: Path, read_only: bool = False):
    """A connection to the atlas database at `path`, its tables and views made (InputError when
    duckdb is missing or the file is another program's)."""
    try:
        import duckdb
    except ImportError:
        from auditor.core.hints import install_hint

        raise InputError(f"the atlas needs duckdb: {install_hint('atlas')}") from None
    try:
        connection = duckdb.connect(str(path), read_only=read_only)
        if not read_only:
            connection.execute(_TABLES)
            connection.execute(_VIEWS)
            connection.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
    except duckdb.Error as exc:
        raise InputError(f"{path}: not an atlas database ({exc})") from None
    return connection


@dataclass(frozen=True)
class StoredRun:
    """A run as the atlas holds it: its key, lineage and the Run read back from its rows."""

    run_id: str
    key: RunKey
    run: Run
    seq: int


def run_id_of(run: Run) -> str:
    """A run's id: its key and when it started (two runs of one key are two runs)."""
    import hashlib

    return hashlib.sha256(f"{key_of(run.info).text}|{run.info.started}|{run.info.hostname}".encode()).hexdigest()[:12]


def has_run(connection, run: Run) -> bool:
    return bool(connection.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id_of(run)]).fetchone()[0])


def present_keys(connection) -> set[str]:
    """The keys (RunKey.text) of the runs in the atlas, and the keys they were swept for."""
    found = connection.execute("SELECT key, request_key FROM runs").fetchall()
    return {key for pair in found for key in pair if key}


def add_run(connection, run: Run, *, swept: bool, request: RunKey | None = None, seconds: float = 0.0) -> str:
    """Insert one run and its rows (a run already in is left as it is); its id."""
    run_id = run_id_of(run)
    if has_run(connection, run):
        return run_id
    connection.execute("BEGIN TRANSACTION")  # a run goes in whole or not at all (a crash, Ctrl-C mid-insert)
    try:
        _insert_run(connection, run, run_id, swept=swept, request=request, seconds=seconds)
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return run_id


def _insert_run(connection, run: Run, run_id: str, *, swept: bool, request: RunKey | None, seconds: float) -> None:
    key = key_of(run.info)
    env_id = environment_id(key)
    connection.execute("INSERT OR IGNORE INTO environments VALUES (?, ?, ?, ?, ?, NULL)",
                       [env_id, key.transformers, key.torch, key.python, ", ".join(key.engines)])
    seq = connection.execute("SELECT coalesce(max(seq), 0) + 1 FROM runs").fetchone()[0]
    added = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    connection.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, key.text, request.text if request else "", key.lineage, env_id, key.transformers, key.torch,
         key.python, ", ".join(key.engines), ",".join(key.checks), ",".join(key.selection), str(run.path), swept,
         added, seq, len(run.results), seconds, json.dumps(run.info.to_json()["run"])])
    insert(connection, "rows", [(run_id, line, r.model_type, r.check, r.column, r.component, r.policy,
                                 r.status.value, r.fault, r.message, r.signature, r.seconds, r.worker,
                                 json.dumps(r.extras, default=str)) for line, r in enumerate(run.results)])
    order_releases(connection)


def environment_id(key: RunKey) -> str:
    return f"{key.transformers} torch {key.torch or '-'} py{key.python}" + (f" {'+'.join(key.engines)}"
                                                                             if key.engines else "")


def order_releases(connection) -> None:
    """`release_order` of every environment: its transformers' place among the atlas's releases."""
    from packaging.version import InvalidVersion, Version

    def order(text: str):
        try:
            return (0, Version(text), text)
        except InvalidVersion:
            return (1, Version("0"), text)

    releases = sorted({r for (r,) in connection.execute("SELECT DISTINCT transformers FROM environments").fetchall()},
                      key=order)
    connection.executemany("UPDATE environments SET release_order = ? WHERE transformers = ?",
                           [[i, release] for i, release in enumerate(releases)])


def stored_runs(connection) -> Iterator[StoredRun]:
    """Every run in the atlas read back (core's own readers of a header and a row), in import order."""
    headers = connection.execute("SELECT run_id, header, source, seq FROM runs ORDER BY seq").fetchall()
    for run_id, header, source, seq in headers:
        info = RunInfo.from_json(json.loads(header))
        rows = connection.execute(
            'SELECT model_type, "check", component, policy, status, fault, message, signature, seconds, worker, '
            "extras FROM rows WHERE run_id = ? ORDER BY line", [run_id]).fetchall()
        results = tuple(Result.from_json(_row(values)) for values in rows)
        yield StoredRun(run_id, key_of(info), Run(info=info, results=results, path=Path(source)), seq)


_ROW_FIELDS = ("model_type", "check", "component", "policy", "status", "fault", "message", "signature", "seconds",
               "worker")


def _row(values: Sequence) -> dict:
    found = dict(zip(_ROW_FIELDS, values[:-1], strict=True))
    return {**found, "extras": json.loads(values[-1] or "{}")}


def derived_stamp(connection) -> str:
    """What the derived tables were made from, as recorded with them ("" before any): see `run_set`."""
    found = connection.execute("SELECT value FROM meta WHERE name = 'derived_from'").fetchone()
    return found[0] if found else ""


def run_set(connection) -> str:
    """The stored runs' ids, in one text: with the deriving code's digest, what the derived tables
    are a function of (auditor.atlas.grid)."""
    return connection.execute("SELECT coalesce(string_agg(run_id, ',' ORDER BY run_id), '') FROM runs").fetchone()[0]


def replace_derived(connection, tables: dict[str, list[tuple]], stamp: str = "") -> None:
    """The derived tables replaced, in one transaction, with what they were made from (`stamp`)."""
    connection.execute("BEGIN TRANSACTION")
    try:
        for name in DERIVED:
            connection.execute(f"DELETE FROM {name}")
            insert(connection, name, tables.get(name, []))
        connection.execute("INSERT OR REPLACE INTO meta VALUES ('derived_from', ?)", [stamp])
        connection.execute("COMMIT")
    except Exception:
        connection.execute("ROLLBACK")
        raise


def insert(connection, table: str, records: Sequence[Sequence]) -> None:
    """Many records into `table` at once (through a data frame: row by row, tens of thousands of
    rows take DuckDB seconds)."""
    if not records:
        return
    import pandas

    columns = [d[0] for d in connection.execute(f"SELECT * FROM {table} LIMIT 0").description]
    frame = pandas.DataFrame([list(r) for r in records], columns=columns)
    connection.register("_records", frame)
    try:
        connection.execute(f"INSERT INTO {table} SELECT * FROM _records")
    finally:
        connection.unregister("_records")
