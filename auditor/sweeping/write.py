"""The write step: each model type's rows into results.jsonl as one unit, as they come."""

from __future__ import annotations

import contextlib
from pathlib import Path

from auditor.core.writing import ResultsWriter
from auditor.sweeping.events import SweepEvents
from auditor.sweeping.plan import SweepPlan
from auditor.sweeping.tables import Tables

INTERRUPTED = "interrupted"


def write_rows(executor, todo, path: Path, info, tables: Tables, plan: SweepPlan, events: SweepEvents,
               *, append: bool, selected=()) -> tuple[int, str]:
    """Run the sweep, writing each model type's rows as one unit as they come, then rerun the
    failures to confirm among the `selected` types (the confirm step); how many model types
    finished, and why it stopped early: "" (it did not), INTERRUPTED, or what failed."""
    from auditor.executors.pool import PoolError
    from auditor.sweeping.confirm import confirm

    done = 0
    events.started(len(todo))
    try:
        writer = ResultsWriter(path, info, append=append)
    except OSError as exc:
        events.ended()
        return done, f"cannot write {path}: {exc.strerror or exc}"
    stopped = ""
    try:
        for batch in executor.run(todo):
            if batch:
                writer.write_type(batch[0].model_type, batch)
                done += 1
                events.finished_type(batch[0].model_type, batch)
            tables.rows_written(last=done == len(todo))
        if confirm(executor, selected, path, writer, plan.request.reruns, events):
            tables.rows_written(last=False)  # tables made before the reruns are made again
    except KeyboardInterrupt:
        stopped = INTERRUPTED
    except PoolError as exc:
        stopped = f"the {plan.executor_name} failed: {exc}"
    except OSError as exc:  # a full disk, a file size limit: the unit being written is a torn tail
        stopped = f"cannot write {path}: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            writer.close()
        events.ended()
    return done, stopped
