"""I/O of a stateless speed version's append-only partials table (``lakehouse.speed_fold``).

* ``append``: one micro-batch's per-window partials, one plain Delta append (rows tagged with the
  lineage and micro-batch id, which ``io.rerun`` checks before a re-run micro-batch writes again):
  the only write between Kafka and visibility.
* ``compact``: the rows of every window that the uncompacted rows of one ended block of micro-batches
  touch, folded into one row per window and written back with ``replaceWhere`` (one atomic commit).
  It reads only the recent region (uncompacted rows sit in the newest files, compacted ones carry
  ``compacted = true`` so file statistics skip them), so its cost follows the rows since the last
  compaction, not the history. The stream runs it on a thread of its own (``compactions``) while the
  next block appends: blocks alternate between two ``slot`` partitions and compacted rows have a
  third (``speed_fold.slot_of``), so the compaction reads and replaces partitions that no append
  running beside it writes, and Delta's conflict check (by partition) lets both commit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse import contracts
from lakehouse.pipeline import Pipeline
from lakehouse.speed_fold import COMPACTED_SLOT, fold_sql, slot_of
from spark_jobs.io.delta_io import tagged_append
from spark_jobs.shared.background import Inflight
from spark_jobs.speed import micro_batch_values as batch_values

_compactions: dict[str, Inflight] = {}  # per partials table: its compaction under way in this process


def compactions(table: str) -> Inflight:
    return _compactions.setdefault(table, Inflight())


def drain_compactions(table: str | None = None) -> None:
    """Wait for the compaction under way of ``table`` (None: of every table in this process) at a
    graceful stop; re-raises a failure."""
    for runs in [compactions(table)] if table is not None else list(_compactions.values()):
        runs.drain()


def _rows(partials: Any, p: Pipeline, version: int, lineage: str, batch_id: int, watermark: datetime) -> Any:
    from pyspark.sql import functions as F

    spark = partials.sparkSession
    # the micro-batch's own values outside the generated code (io.batch_values); the slot, a partition
    # value, stays a literal: it changes once per block and its few values repeat (Spark's code cache)
    rows = partials.select("*", batch_values.timestamp(spark, datetime.now(UTC)).alias("updated_at"),
                           batch_values.whole_number(spark, batch_id).alias("batch_id"),
                           batch_values.timestamp(spark, watermark).alias("watermark"), F.lit(lineage).alias("lineage"),
                           F.lit(False).alias("compacted"), F.lit(slot_of(batch_id)).alias("slot"))
    return rows.select(*contracts.speed_partials(p, version).column_names)


def append(partials: Any, p: Pipeline, version: int, lineage: str, batch_id: int, watermark: datetime) -> None:
    tagged_append(_rows(partials, p, version, lineage, batch_id, watermark), contracts.speed_partials(p, version).name,
                  f"{lineage}/{batch_id}")


def write_scratch(partials: Any, p: Pipeline, version: int, path: Path, watermark: datetime) -> None:
    """The append's write path (columns, Parquet, Delta commit) once, into a scratch Delta table at
    ``path`` that nothing reads: a new process's first real append then runs warm."""
    _rows(partials, p, version, "warm-up", 0, watermark).write.format("delta").mode("overwrite").save(str(path))


def compact(spark: Any, p: Pipeline, table: str, slot: int, upto: int) -> int:
    """Fold the windows that uncompacted rows of ``slot`` up to micro-batch ``upto`` touch; returns how
    many rows were folded (0: nothing to do). Rows of the other slot are left as they are."""
    mine = f"slot = {int(slot)} AND NOT compacted AND batch_id <= {int(upto)}"
    row = spark.sql(f"SELECT unix_micros(min(window_start)) AS lo, count(*) AS n FROM {table} WHERE {mine}").collect()[0]
    if not row["n"]:
        return 0
    # the partition conjunct comes first and alone: Delta checks concurrent appends against it
    region = (f"slot IN ({int(slot)}, {COMPACTED_SLOT}) AND window_start >= timestamp_micros({int(row['lo'])}) "
              f"AND (compacted OR batch_id <= {int(upto)})")
    folded = spark.sql(fold_sql(p, table, where=region, compacted=True)).coalesce(1)
    columns = spark.table(table).columns
    try:
        (folded.select(*columns).write.format("delta").mode("overwrite").option("replaceWhere", region)
         .saveAsTable(table))
    except Exception as exc:  # e.g. an OPTIMIZE (maintenance DAG) rewrote these files meanwhile
        if "Concurrent" not in f"{type(exc).__name__} {exc}":
            raise
        print(f"stream: compaction of {table} skipped, to be retried ({str(exc).splitlines()[0][:200]})", flush=True)
        return 0
    return int(row["n"])
