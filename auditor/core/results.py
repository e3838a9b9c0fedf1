"""The core records of a sweep: Status, Result, RunInfo, and the versioned results.jsonl file.

`results.jsonl` is the source of truth of a run. Its first line is a header
(`{"kind": "header", "format_version": N, "run": {...}}`), every further line one
`Result` (`{"kind": "result", ...}`). Lines are appended and flushed as results
arrive, so a crash or Ctrl-C never loses a finished row.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.core.status import Status

FORMAT_VERSION = 1
RESULTS_FILE = "results.jsonl"


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

    @property
    def environment(self) -> str:
        """A short name of the environment, the column group of a merged matrix."""
        return self.label or f"py{self.python_minor} tf{self.transformers} torch{self.torch}"

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["checks"] = list(self.checks)
        return {"kind": "header", "format_version": FORMAT_VERSION, "run": data}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunInfo:
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["checks"] = tuple(values.get("checks", ()))
        return cls(**values)


class ResultsFileError(ValueError):
    """A results file that cannot be read: missing, malformed, or of another format version."""


@dataclass(frozen=True)
class Run:
    """A results file read back: its environment and its results."""

    info: RunInfo
    results: tuple[Result, ...]
    path: Path


def results_path(path: str | os.PathLike[str]) -> Path:
    """Accept a run directory or a results.jsonl file."""
    p = Path(path)
    return p / RESULTS_FILE if p.is_dir() else p


def read_run(path: str | os.PathLike[str]) -> Run:
    p = results_path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ResultsFileError(f"cannot read {p}: {exc.strerror or exc}") from exc
    if not lines:
        raise ResultsFileError(f"{p} is empty")
    header = _parse_line(p, 1, lines[0])
    if header.get("kind") != "header":
        raise ResultsFileError(f"{p}: the first line is not a results header")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise ResultsFileError(
            f"{p} has results format version {version!r}; this auditor reads version "
            f"{FORMAT_VERSION}. Re-run the sweep with this version, or use the auditor that wrote it."
        )
    try:
        info = RunInfo.from_json(header["run"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultsFileError(f"{p}: the header does not describe a run ({exc})") from exc
    results = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            data = _parse_line(p, number, line)
        except ResultsFileError:
            if number == len(lines):  # a last line cut short by a kill: keep the rest
                break
            raise
        if data.get("kind") == "result":
            try:
                results.append(Result.from_json(data))
            except (KeyError, TypeError, ValueError) as exc:
                raise ResultsFileError(f"{p}:{number}: not a valid result ({exc})") from exc
    return Run(info=info, results=tuple(results), path=p)


def _parse_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}:{number}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path}:{number}: not a JSON object")
    return data


class ResultsWriter:
    """Appends results to results.jsonl, one flushed line each."""

    def __init__(self, path: Path, info: RunInfo, *, append: bool = False) -> None:
        self.path = path
        self._file = path.open("a" if append else "w", encoding="utf-8")
        if not append:
            self._write(info.to_json())

    def write(self, result: Result) -> None:
        self._write(result.to_json())

    def write_all(self, results: Iterable[Result]) -> None:
        for result in results:
            self.write(result)

    def _write(self, data: dict[str, Any]) -> None:
        self._file.write(json.dumps(data, sort_keys=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def done_model_types(results: Iterable[Result]) -> set[str]:
    """Model types that already have a row: what --resume skips."""
    return {r.model_type for r in results}
