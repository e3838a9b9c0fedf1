"""The core records of a sweep: Result, RunInfo, and the versioned results.jsonl file: what it
holds, how it is read, and how a torn tail is repaired (auditor.core.writing writes it).

`results.jsonl` is the source of truth of a run. Its first line is a header
(`{"kind": "header", "format_version": N, "run": {...}}`), every further line one
`Result` (`{"kind": "result", ...}`) or, from format version 2 on, the completion record of
a model type (`{"kind": "done", "model_type": ..., "rows": N}`).

A model type is one unit: its rows and its completion record are written together, in one
unbuffered write, then flushed to the disk (`fsync`) before the next type's. A reader counts a
type's rows only once its completion record follows them, so whatever cuts the file short (a
`kill -9`, a power loss, a full disk) costs at most the model type being written, never a row
of a finished one, and never makes the file unreadable: a torn tail is reported (`Run.damage`)
and, before a resumed sweep appends, moved out of the live file by `repair`. A tail overwritten
with garbage is read the same way: the first line that is not a record stops the reading when no
record follows it (one that does is damage inside the file, an error). Version 1 files
(no completion records) are still read: every row counts, a cut last line is dropped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.core.engineinfo import EngineInfo
from auditor.core.errors import InputError
from auditor.core.status import Failure, Status, default_fault

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
RESULTS_FILE = "results.jsonl"
# A run id names one run directory of a reports folder (REPORTS/RUN_ID/results.jsonl): one path
# component, so that it can neither leave the folder nor nest in it (a run's earlier runs are its
# siblings), of characters that every file system and shell takes as they are.
RUN_ID_RULE = "one name of ASCII letters, digits, '.', '_', '-' and '+', not starting with '.'"
_RUN_ID = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")
TORN_SUFFIX = ".torn"  # results.jsonl.torn: what `repair` took out of the live file, appended


@dataclass(frozen=True)
class Result:
    """One outcome: a model type, under one check, component and policy."""

    model_type: str
    check: str
    status: Status
    component: str = ""
    policy: str = ""
    message: str = ""
    signature: str = ""
    seconds: float = 0.0
    extras: dict[str, Any] = field(default_factory=dict)
    worker: str = ""
    # Whose fault the row is (auditor.core.fault.Fault's value): "" for a pass or a skip. Rows
    # made from a Failure carry its fault (`failed`); any other row gets its status's default,
    # and so do rows of files written before the field existed.
    fault: str = ""

    def __post_init__(self) -> None:
        if not self.fault:
            object.__setattr__(self, "fault", default_fault(self.status).value)

    @classmethod
    def failed(cls, model_type: str, check: str, failure: Failure, **fields: Any) -> Result:
        """The row of `failure`: its status, message, signature, fault, and its extras merged
        under the row's own."""
        extras = {**failure.extras, **fields.pop("extras", {})}
        return cls(model_type, check, failure.status, message=failure.message, signature=failure.signature,
                   fault=failure.fault.value, extras=extras, **fields)

    @property
    def column(self) -> str:
        """The matrix column of this result: check, then component and policy when set."""
        return "/".join(part for part in (self.check, self.component, self.policy) if part)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        return {"kind": "result", **data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["status"] = Status(values["status"])
        return cls(**values)


@dataclass(frozen=True)
class RunInfo:
    """The environment of one run, written as the header of results.jsonl."""

    python: str
    torch: str
    transformers: str
    accelerate: str
    cloudpickle: str
    platform: str
    device: str
    auditor: str
    git_revision: str
    command: str
    started: str
    hostname: str = ""
    checks: tuple[str, ...] = ()
    label: str = ""
    shard: str = ""  # "I/N" when this run is one shard of a split sweep
    # What else decides what a cell means (policies, device, backend, compile options, plugins,
    # online): `auditor sweep --resume` refuses to add rows to a run of another experiment.
    experiment: dict[str, Any] = field(default_factory=dict)
    engines: tuple[EngineInfo, ...] = ()  # the serving engines the run checked (auditor.core.engineinfo)
    # The flags that chose the run's model types, as given (`--models llama,gpt2`; () for all):
    # which earlier run a report compares with (auditor.report.since). None: not recorded (older runs).
    selection: tuple[str, ...] | None = None
    # The flags beside --models and --checks that sweep one of its cells again (policies, device,
    # plugins, ...: auditor.core.repro); None: not recorded (older runs).
    repeat: tuple[str, ...] | None = None

    @property
    def installed_engines(self) -> dict[str, str]:
        """Engine name -> version, of the engines installed where the run ran (not emulated only)."""
        return {engine.name: engine.version for engine in self.engines if engine.installed}

    @property
    def engine_versions(self) -> str:
        """The engines' versions in one line ("" for a run that recorded none)."""
        return "; ".join(engine.text for engine in self.engines)

    @property
    def environment(self) -> str:
        """A short name of the environment, the column group of a merged matrix."""
        return self.label or f"py{self.python_minor} tf{self.transformers} torch{self.torch}"

    @property
    def compile_semantics(self) -> str:
        """Whose way the run's compile check compiled (an engine's, or "plain"); "" without that
        check. Runs written before the choice existed compiled the plain way."""
        if "compile" not in self.checks:
            return ""
        return str(self.experiment.get("compile_semantics", "plain"))

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["checks"] = list(self.checks)
        data["engines"] = [engine.to_json() for engine in self.engines]
        for name in ("selection", "repeat"):
            if data[name] is None:
                del data[name]  # not recorded: the header reads as an older auditor's
            else:
                data[name] = list(data[name])
        return {"kind": "header", "format_version": FORMAT_VERSION, "run": data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunInfo:
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["checks"] = tuple(values.get("checks", ()))
        values["engines"] = tuple(EngineInfo.from_json(e) for e in values.get("engines", ()))
        for name in ("selection", "repeat"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        return cls(**values)


class ResultsFileError(InputError):
    """A results file that cannot be read: missing, malformed, or of another format version."""


@dataclass(frozen=True)
class Damage:
    """What a results file cut short or overwritten lost: its unreadable tail (a line cut
    mid-way or not JSON, and every line after it, none of them a record), and the model types
    whose rows have no completion record (they count as not done)."""

    torn_at: int = 0  # the line (1-based) that stopped the reading: where the unreadable tail starts; 0: none
    torn_lines: int = 0  # how many lines that tail is
    incomplete: tuple[tuple[str, int], ...] = ()  # (model type, rows it had)

    @property
    def lost_rows(self) -> int:
        return sum(rows for _, rows in self.incomplete)

    def note(self) -> str:
        parts = []
        if self.torn_at:
            last = self.torn_at + self.torn_lines - 1
            parts.append(f"line {self.torn_at}" if last == self.torn_at else f"lines {self.torn_at}-{last}")
        if self.incomplete:
            names = ", ".join(f"{model_type} ({rows} row{'s' if rows != 1 else ''})"
                              for model_type, rows in self.incomplete[:5])
            more = f" and {len(self.incomplete) - 5} more" if len(self.incomplete) > 5 else ""
            parts.append(f"the unfinished rows of {names}{more}")
        return " and ".join(parts)


@dataclass(frozen=True)
class Run:
    """A results file read back: its environment, its results, and what a cut cost it."""

    info: RunInfo
    results: tuple[Result, ...]
    path: Path
    format_version: int = FORMAT_VERSION
    damage: Damage | None = None

    @property
    def done_model_types(self) -> set[str]:
        """Model types whose rows are all there: what --resume skips."""
        return {r.model_type for r in self.results}


def check_run_id(text: str, what: str) -> str:
    """`text`, when it is a run id (RUN_ID_RULE); an InputError otherwise, saying what is and
    offering a name made of `text` that is one. `what` names where the id came from (the flag,
    the variable)."""
    if _RUN_ID.fullmatch(text):
        return text
    fixed = re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip(".-")
    offer = f", such as {fixed!r}" if fixed else ""
    shown = f"{what} {text!r} is not a run id" if text else f"{what} is empty"
    raise InputError(f"{shown}: a run id is {RUN_ID_RULE}{offer}; it names a run directory inside "
                     "the reports folder, never a path")


def results_path(path: str | os.PathLike[str]) -> Path:
    """Accept a run directory or a results.jsonl file."""
    p = Path(path)
    return p / RESULTS_FILE if p.is_dir() else p


def read_run(path: str | os.PathLike[str]) -> Run:
    """The run in a results file; a torn tail is left out and described in `damage`."""
    return _scan(results_path(path)).run


def read_info(path: str | os.PathLike[str]) -> RunInfo:
    """The environment a results file describes, from its header alone (its rows are not read)."""
    p = results_path(path)
    try:
        with p.open("rb") as f:
            line = f.readline()
    except OSError as exc:
        raise ResultsFileError(f"cannot read {p}: {exc.strerror or exc}") from exc
    if not line.strip():
        raise ResultsFileError(f"{p} is empty")
    return _header(p, line)[0]


def repair(path: str | os.PathLike[str]) -> Damage | None:
    """Take a torn tail out of the live file before anything is appended to it.

    The cut line and the rows of model types without a completion record are appended to
    `results.jsonl.torn` next to it (kept, not deleted); the live file is rewritten without them
    through a temporary file and a rename, so it is whole at every moment. None when there was
    nothing to repair.
    """
    p = results_path(path)
    scan = _scan(p)
    if scan.run.damage is None:
        return None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with p.with_name(p.name + TORN_SUFFIX).open("ab") as torn:
        torn.write(f"# {stamp}: removed from {p.name} before a resumed sweep appended to it: "
                   f"{scan.run.damage.note()}\n".encode())
        torn.writelines(line if line.endswith(b"\n") else line + b"\n" for line in scan.dropped)
        torn.flush()
        os.fsync(torn.fileno())
    temporary = p.with_name(f".{p.name}.repair")
    with temporary.open("wb") as out:
        out.writelines(scan.kept)
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(p)
    _sync_directory(p.parent)
    return scan.run.damage


@dataclass
class _Scan:
    run: Run
    kept: list[bytes]  # the live file's lines that stay (header first), with their newlines
    dropped: list[bytes]  # the torn tail: what repair moves out


def _scan(p: Path) -> _Scan:
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ResultsFileError(f"cannot read {p}: {exc.strerror or exc}") from exc
    lines = data.splitlines(keepends=True)
    if not lines or not lines[0].strip():
        raise ResultsFileError(f"{p} is empty")
    info, version = _header(p, lines[0])
    records, torn = _records(p, lines)
    dropped_index = set(range(torn, len(lines))) if torn else set()
    results, incomplete = _units(p, records, version, dropped_index)
    damage = Damage(torn + 1 if torn else 0, len(lines) - torn if torn else 0, incomplete) \
        if torn or incomplete else None
    run = Run(info=info, results=tuple(r for i, r in sorted(results.items()) if i not in dropped_index), path=p,
              format_version=version, damage=damage)
    kept = [line for i, line in enumerate(lines) if i not in dropped_index]
    dropped = [lines[i] for i in sorted(dropped_index)]
    return _Scan(run, kept, dropped)


def _header(p: Path, line: bytes) -> tuple[RunInfo, int]:
    """The run a results file describes and its format version, or why it cannot be read."""
    header = _parse_line(p, 1, line)
    if header.get("kind") != "header":
        raise ResultsFileError(f"{p}: the first line is not a results header")
    version = header.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ResultsFileError(
            f"{p} has results format version {version!r}; this auditor reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}. Re-run the sweep with this version, or use the auditor "
            "that wrote it."
        )
    try:
        return RunInfo.from_json(header["run"]), version
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultsFileError(f"{p}: the header does not describe a run ({exc})") from exc


def _records(p: Path, lines: list[bytes]) -> tuple[list[tuple[int, dict]], int]:
    """(index in lines, record) of every line after the header, and the index where its torn
    tail starts (0: none). The tail is the first line cut short (every write ends with a
    newline) or not a JSON object, with every line after it, when none after it is one: what a
    killed write or a tail overwritten with garbage leaves. Such a line with a record after it is
    damage inside the file, an error: reading around it would drop the rows that follow."""
    records: list[tuple[int, dict]] = []
    for index in range(1, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        try:
            if not line.endswith(b"\n"):
                raise ResultsFileError(f"{p}:{index + 1}: cut short")
            records.append((index, _parse_line(p, index + 1, line)))
        except ResultsFileError:
            if any(_is_record(rest) for rest in lines[index + 1:]):
                raise
            return records, index
    return records, 0


def _is_record(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def _units(p: Path, records: list[tuple[int, dict]], version: int,
           dropped_index: set[int]) -> tuple[dict[int, Result], tuple[tuple[str, int], ...]]:
    """The results by line index, and the model types whose unit has no completion record
    (format 2): their rows, and a unit whose record counts other rows, join `dropped_index`."""
    results: dict[int, Result] = {}
    pending: dict[str, list[int]] = {}
    for index, record in records:
        kind = record.get("kind")
        if kind == "result":
            try:
                results[index] = Result.from_json(record)
            except (KeyError, TypeError, ValueError) as exc:
                raise ResultsFileError(f"{p}:{index + 1}: not a valid result ({exc})") from exc
            pending.setdefault(results[index].model_type, []).append(index)
        elif kind == "done" and version >= 2:
            rows = pending.pop(str(record.get("model_type")), [])
            if len(rows) != record.get("rows"):  # cannot happen but by corruption: not done
                dropped_index.update(rows)
                dropped_index.add(index)
    if version < 2:
        return results, ()
    for rows in pending.values():
        dropped_index.update(rows)
    return results, tuple((model_type, len(rows)) for model_type, rows in pending.items() if rows)


def _parse_line(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"{path}:{number}: not JSON ({getattr(exc, 'msg', exc)})") from exc
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path}:{number}: not a JSON object")
    return data


def _sync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable (where the platform allows opening a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
