"""The long and wide tables of a sweep, as pandas DataFrames with a stable column order."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from auditor.core.extras import ModelFacts
from auditor.core.results import Run
from auditor.report.matrix import build_matrix
from auditor.report.serve import verdicts

LONG_COLUMNS = [
    "environment", "model_type", "check", "component", "policy", "column",
    "status", "fault", "signature", "message", "seconds", "model_class", "parameters",
    "parameter_bytes", "escaped", "worker",
]


def long_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per model type, component, check, policy and environment."""
    rows = []
    for run in runs:
        for r in run.results:
            facts = ModelFacts.from_extras(r.extras)
            rows.append({
                "environment": run.info.environment,
                "model_type": r.model_type,
                "check": r.check,
                "component": r.component,
                "policy": r.policy,
                "column": r.column,
                "status": r.status.value,
                "fault": r.fault,
                "signature": r.signature,
                "message": r.message,
                "seconds": round(r.seconds, 3),
                "model_class": _or_blank(facts.model_class),
                "parameters": _or_blank(facts.parameters),
                "parameter_bytes": _or_blank(facts.parameter_bytes),
                "escaped": _or_blank(facts.escaped),
                "worker": r.worker,
            })
    frame = pd.DataFrame(rows, columns=LONG_COLUMNS)
    return frame.sort_values(["environment", "model_type", "column"], kind="stable").reset_index(drop=True)


def _or_blank(value):
    return "" if value is None else value


def matrix_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """The matrix (auditor.report.matrix) as a table: one row per model type, one column per
    matrix column, named `environment | column` when there are several environments."""
    matrix = build_matrix(runs)
    several = len(matrix.groups) > 1
    names = [column.key if several else column.column for column in matrix.columns]
    rows = [[row.model_type, *(cell.status.value if cell is not None else "" for cell in row.cells)] for row in matrix.rows]
    return pd.DataFrame(rows, columns=["model_type", *names], dtype=object)


# serve.csv's fields of each engine, for scripts: `serve/<engine>/<field>`.
SERVE_FIELDS = ("verdict", "path", "gate", "signature", "fault", "message")


def serve_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """serve.csv: one row per model type (and environment, when several), per engine the runs
    recorded `serve/<engine>` (its verdict as a sentence: "servable", "stops at <gate>: <message>"),
    the same in fields for scripts (`serve/<engine>/verdict`: servable, stops or undecided; `/path`:
    how the engine's own answer serves it, "native X" or "Transformers backend (X)"; `/gate`,
    `/signature`: the stop's cause, `/fault`, `/message`) and, where the run compiled with that
    engine's semantics, `serve/<engine>/compile`."""
    found = verdicts(runs)
    several = len({v.environment for v in found}) > 1
    compiled = {v.engine.name for v in found if v.compiles is not None}
    names = list(dict.fromkeys(v.engine.name for v in found))
    columns = [c for name in names for c in (f"serve/{name}", *(f"serve/{name}/{f}" for f in SERVE_FIELDS),
                                             *((f"serve/{name}/compile",) if name in compiled else ()))]
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for v in found:
        row = rows.setdefault((v.environment, v.model_type), {"environment": v.environment, "model_type": v.model_type})
        head = f"serve/{v.engine.name}"
        row[head] = v.text
        fields = (str(v.serves), v.path, v.gate, v.signature if v.gate else "", v.fault, v.message)
        row.update({f"{head}/{name}": value for name, value in zip(SERVE_FIELDS, fields, strict=True)})
        if v.engine.name in compiled:
            row[f"{head}/compile"] = v.compile_text
    heads = ["environment", "model_type"] if several else ["model_type"]
    return pd.DataFrame(list(rows.values()), columns=[*heads, *columns], dtype=object).fillna("")


def csv_text(frame: pd.DataFrame) -> str:
    """A frame as CSV text with `\n` line ends on every platform, so the files diff well in git."""
    return frame.to_csv(index=False, lineterminator="\n")

