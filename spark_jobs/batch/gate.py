"""The audit of an incremental run that stages, audits and publishes as one unit (``batch.wap.run``), run on
the rows being staged while they are written.

The run's staging rows are computed once, into Spark's cache. The write to ``batch.<p>__staging`` (Spark
jobs and a Delta commit) and the gate (GX on a pandas copy of the rows: mostly Python work, on the other
core) then read that cache side by side, on two threads, so the verdict is ready about when the write
is, instead of after it and a read of the staging table back. What is audited is what is written: one
computation, one cached frame (its ``computed_at`` included). Publish still waits for both; a failed
gate still publishes nothing. A full run stages every window (its rows are the whole table, not a few
thousand), so it keeps the audit after the write, on the staging version it wrote, as the Airflow DAG's
separate stage and validate tasks do (``batch.wap.audit``). Whoever audits, the verdict is recorded in one
form (``batch.wap.verdict``), and publish requires a passing one on the run's own rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spark_jobs.shared.background import Background

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Audit = Callable[["DataFrame", int], Any]
"""The gate on a frame of staging rows and its count of written (not deleted) rows: returns the gate's
outcome, raises ``TidewaterError`` when it fails."""


class GateAlongside:
    """``audit`` of ``rows`` on a thread of its own, from a cache that ``rows`` (the same frame, persisted)
    shares with the caller's write of them."""

    def __init__(self, audit: Audit, rows: DataFrame) -> None:
        self.rows = rows.persist()
        # one job computes the cache before both read it (two jobs at once would each compute the shuffles
        # under it); it also gives the gate its row count, which chooses its engine without a job
        written = self.rows.where("op <> 'delete'").count()
        self.outcome: Any = None
        self.run = Background(self._audit, audit, written)

    def _audit(self, audit: Audit, written: int) -> None:
        self.outcome = audit(self.rows, written)

    def verdict(self) -> Any:
        """Wait for the gate: its outcome, or its error. Releases the cached rows."""
        try:
            self.run.join()
        finally:
            self.rows.unpersist()
        return self.outcome

    def abandon(self) -> None:
        """The write failed: wait for the gate without its verdict, and release the cached rows."""
        with contextlib.suppress(Exception):  # the write's error is the one the caller raises
            self.verdict()
