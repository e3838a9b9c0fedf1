"""The long and wide tables of a sweep, as pandas DataFrames with a stable column order."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from auditor.core.results import Run

LONG_COLUMNS = [
    "environment", "model_type", "check", "component", "policy", "column",
    "status", "signature", "message", "seconds", "model_class", "parameters",
    "parameter_bytes", "escaped", "worker",
]


def long_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per model type, component, check, policy and environment."""
    rows = []
    for run in runs:
        for r in run.results:
            rows.append({
                "environment": run.info.environment,
                "model_type": r.model_type,
                "check": r.check,
                "component": r.component,
                "policy": r.policy,
                "column": r.column,
                "status": r.status.value,
                "signature": r.signature,
                "message": r.message,
                "seconds": round(r.seconds, 3),
                "model_class": r.extras.get("model_class", ""),
                "parameters": r.extras.get("parameters", ""),
                "parameter_bytes": r.extras.get("parameter_bytes", ""),
                "escaped": r.extras.get("escaped", ""),
                "worker": r.worker,
            })
    frame = pd.DataFrame(rows, columns=LONG_COLUMNS)
    return frame.sort_values(["environment", "model_type", "column"], kind="stable").reset_index(drop=True)


def matrix_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per model type, one column per check column (per environment when several)."""
    long = long_frame(runs)
    if long.empty:
        return pd.DataFrame(columns=["model_type"])
    several = long["environment"].nunique() > 1
    long["key"] = (long["environment"] + " | " + long["column"]) if several else long["column"]
    wide = long.pivot_table(index="model_type", columns="key", values="status", aggfunc="first")
    wide = wide.reindex(sorted(wide.columns, key=_column_order), axis=1)
    wide.columns.name = None
    return wide.reset_index().fillna("")


def csv_text(frame: pd.DataFrame) -> str:
    """A frame as CSV text with `\n` line ends on every platform, so the files diff well in git."""
    return frame.to_csv(index=False, lineterminator="\n")


def _column_order(key: str) -> tuple:
    env, _, column = key.rpartition(" | ")
    return (env, column != "build", column)
