"""``ops.batch_runs``: one row per batch run, upserted as it moves staged -> published (or failed).

Statuses: ``staged`` (rows computed into ``batch.<p>__staging``), ``published`` (merged into
``batch.<p>``), ``superseded`` (a newer run was staged before this one was published), ``failed``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lakehouse import contracts
from lakehouse.errors import TidewaterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLE = contracts.BATCH_RUNS.name


def now() -> datetime:
    return datetime.now(UTC)


def runs(spark: SparkSession, pipeline: str) -> list[dict[str, Any]]:
    rows = spark.table(TABLE).where(f"pipeline = '{pipeline}'").collect()
    return sorted((r.asDict() for r in rows), key=lambda r: r["staged_at"])


def last_published(spark: SparkSession, pipeline: str) -> dict[str, Any] | None:
    done = [r for r in runs(spark, pipeline) if r["status"] == "published"]
    return max(done, key=lambda r: r["published_at"]) if done else None


def published_cutoff(spark: SparkSession, pipeline: str) -> datetime | None:
    """Cutoff of the latest published batch run, or None before the first one (the one reader of
    this fact: the serving view, the serving-gap suite and the incremental batch all come here)."""
    if not spark.catalog.tableExists(TABLE):
        return None
    last = last_published(spark, pipeline)
    return last["cutoff"] if last else None


def save(spark: SparkSession, row: dict[str, Any], supersede_staged: bool = False) -> None:
    """Insert or replace the run's row (keyed on run_id); with ``supersede_staged``, in the same
    commit, every other ``staged`` run of its pipeline becomes ``superseded`` (a newly staged run)."""
    from delta.tables import DeltaTable

    full = {c: row.get(c) for c in contracts.BATCH_RUNS.column_names}
    schema = contracts.BATCH_RUNS.schema
    merge = (DeltaTable.forName(spark, TABLE).alias("t").merge(spark.createDataFrame([full], schema).alias("s"),
                                                               "t.run_id = s.run_id")
             .whenMatchedUpdateAll().whenNotMatchedInsertAll())
    if supersede_staged:
        pipeline = str(row["pipeline"]).replace("'", "")
        merge = merge.whenNotMatchedBySourceUpdate(condition=f"t.pipeline = '{pipeline}' AND t.status = 'staged'",
                                                   set={"status": "'superseded'"})
    merge.execute()


def as_read(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as ``runs`` reads it back: every column, instants as naive datetimes in this process's
    zone (what ``collect()`` returns), so a caller that kept the row it saved needs no read."""
    return {c: v.astimezone().replace(tzinfo=None) if isinstance(v, datetime) else v
            for c, v in ((c, row.get(c)) for c in contracts.BATCH_RUNS.column_names)}


def already_published(spark: SparkSession, pipeline: str, run_id: str) -> dict[str, Any] | None:
    """Run ``run_id`` if it is published already (publishing it again is a no-op), else None."""
    mine = [r for r in runs(spark, pipeline) if r["run_id"] == run_id and r["status"] == "published"]
    return mine[0] if mine else None


def require_latest_staged(spark: SparkSession, pipeline: str, run_id: str) -> dict[str, Any]:
    """The staged run ``run_id``, or a TidewaterError saying why it cannot be published."""
    all_runs = runs(spark, pipeline)
    mine = [r for r in all_runs if r["run_id"] == run_id]
    if not mine:
        raise TidewaterError(f"batch: run {run_id!r} of {pipeline} is not in {TABLE}; stage one with "
                             f"'tidewater batch {pipeline} --stage-only'")
    run = mine[0]
    staged = [r for r in all_runs if r["status"] == "staged"]
    latest = staged[-1]["run_id"] if staged else None
    if run["status"] != "staged" or latest != run_id:
        raise TidewaterError(f"batch: run {run_id} of {pipeline} is '{run['status']}', not the latest staged run "
                             f"(latest staged: {latest}); stage a new run with 'tidewater batch {pipeline} --stage-only'")
    return run
