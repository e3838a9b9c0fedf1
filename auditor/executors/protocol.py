"""What a worker sends back, whichever executor runs it: one message format, read in one place.

A worker (a pool process over its pipe, or a Ray task as a streamed generator) sends plain
`(kind, payload)` tuples: small, picklable, and never read from stdout, so a model that prints
cannot corrupt a result. Per model type it sends `check` before each check, `result` for each
row and `done` at the end. Each executor adds one message of its own: a pool worker says
`ready` once its imports are done; a Ray task says `started` when it begins on a node, and the
driver reads a task that ended without `done` as an `error`.

The driver keeps a `TypeProgress` per model type in flight: the rows received so far and the check
that was running, which is what the death rows of a crash, timeout or oom start from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from auditor.core.results import Result
from auditor.models.cases import ModelCase


class MessageKind(str, Enum):
    READY = "ready"  # a pool worker imported everything and started its checks; payload: its pid
    STARTED = "started"  # a Ray task began; payload: "node-ip:pid", the rows' worker
    CHECK = "check"  # a check begins on the model type; payload: the check's name
    RESULT = "result"  # one row; payload: Result.to_json()
    DONE = "done"  # the model type is finished; payload: its name
    ERROR = "error"  # the task ended without finishing its model type; payload: why
    # The worker takes no further model type: its device met a sticky error (auditor.core.status.
    # sticky_device_error) or failed its health probe after this type. Sent before `done`;
    # payload: a `Retirement.to_json()`.
    RETIRE = "retire"
    # A Ray task's worker says what it runs, first (before its imports and any row): its
    # environment as a run's header records it (auditor.core.runinfo.environment); the driver
    # writes no row of a worker whose environment is not the header's. Payload: (worker, that dict).
    ENVIRONMENT = "environment"


Message = tuple  # (MessageKind value, payload)


def check_started(name: str) -> Message:
    return (MessageKind.CHECK.value, name)


def row(result: Result) -> Message:
    return (MessageKind.RESULT.value, result.to_json())


def done(model_type: str) -> Message:
    return (MessageKind.DONE.value, model_type)


def ready(pid: int) -> Message:
    return (MessageKind.READY.value, pid)


def started(worker: str) -> Message:
    return (MessageKind.STARTED.value, worker)


def environment(worker: str, found: dict[str, str]) -> Message:
    return (MessageKind.ENVIRONMENT.value, (worker, dict(found)))


def error(why: str) -> Message:
    return (MessageKind.ERROR.value, why)


def retire(retirement: Retirement) -> Message:
    return (MessageKind.RETIRE.value, retirement.to_json())


@dataclass(frozen=True)
class Retirement:
    """Why a worker stops after its model type, and what of that type ran in a broken context.

    `unrun`: the checks the worker did not run after the row that broke its device (the culprit's
    row stands; these run again in a fresh worker). `rerun_all`: the device was found broken only
    after the type (its health probe failed): every row of the type ran in a context found broken,
    so the whole type runs again in a fresh worker, and that rerun decides."""

    why: str
    unrun: tuple[str, ...] = ()
    rerun_all: bool = False

    def to_json(self) -> dict:
        return {"why": self.why, "unrun": list(self.unrun), "rerun_all": self.rerun_all}

    @classmethod
    def from_json(cls, data: dict) -> Retirement:
        return cls(data["why"], tuple(data.get("unrun", ())), bool(data.get("rerun_all")))


@dataclass
class TypeProgress:
    """One model type's messages so far, as the driver has read them."""

    check: str = ""  # the check running (or last begun): a death's rows start there
    results: list[Result] = field(default_factory=list)

    def take(self, message: Message) -> tuple[MessageKind, object]:
        """Record a check's start or a row; return the message's kind and payload, for the
        executor's own steps (ready, started, done, error)."""
        kind, payload = MessageKind(message[0]), message[1]
        if kind is MessageKind.CHECK:
            self.check = payload
        elif kind is MessageKind.RESULT:
            self.results.append(Result.from_json(payload))
        return kind, payload


# The extras key of a row computed again in a fresh worker because the first worker's device was
# found broken after its type: why (Retirement.why, with the worker that ran it first).
RERUN_AFTER_KEY = "rerun_after"


@dataclass(frozen=True)
class TypeTask:
    """A model type to run: all its checks, or (after a worker retired mid-type) those in `only`,
    the rows already decided (`kept`) joining the ones it yields."""

    case: ModelCase
    only: tuple[str, ...] = ()
    kept: tuple[Result, ...] = ()
    rerun_after: str = ""  # why the whole type runs again (a device found broken after it); "": first run


def finish(task: TypeTask, results: list[Result], retirement: Retirement | None,
           worker: str) -> tuple[list[Result] | None, TypeTask | None]:
    """A type's rows once its worker said `done`, or what of it runs again first in a fresh worker
    (the one rule of both executors): (rows, None), or (None, the task to run next). `results`:
    every row received, `task.kept` first. After a retirement the checks the worker left unrun run
    next, the culprit's rows kept; when the device was found broken only after the type, the whole
    type runs again, once, and that rerun decides (its rows carry RERUN_AFTER_KEY)."""
    if task.rerun_after:
        results = [*task.kept, *(replace(row, extras={**row.extras, RERUN_AFTER_KEY: task.rerun_after})
                                 for row in results[len(task.kept):])]
    if retirement is None:
        return results, None
    if retirement.rerun_all and not task.rerun_after:
        why = f"rerun in a fresh worker: the device of {worker}, which ran it first, failed its probe after it " \
              f"({retirement.why})"
        return None, replace(task, rerun_after=why)
    if retirement.unrun and not retirement.rerun_all:
        return None, TypeTask(task.case, retirement.unrun, tuple(results))
    return results, None
