"""Where the reconciliation ledger's time goes: each input it compares (``spark_jobs.batch.reconcile.
ledger_inputs``), counted on its own, rows and seconds, for one published run (scenario 3 measures the last
incremental round's)."""

from __future__ import annotations

import time
from typing import Any

from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.batch.reconcile import ledger_inputs, published_run


def input_costs(spark: Any, cfg: TidewaterConfig, p: Pipeline, run_id: str) -> dict[str, dict[str, float]]:
    """{input: {"rows": n, "seconds": s}} (empty when the run has nothing to compare)."""
    inputs = ledger_inputs(spark, cfg, p, published_run(spark, p, run_id))
    if inputs is None:
        return {}
    out: dict[str, dict[str, float]] = {}
    try:
        for name, frame in inputs.items():
            started = time.monotonic()
            rows = frame.count()
            out[name] = {"rows": rows, "seconds": round(time.monotonic() - started, 2)}
    finally:
        inputs["staged"].unpersist()
    return out
