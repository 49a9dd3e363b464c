"""``late.<p>``: the events a speed micro-batch leaves out because they are behind its watermark.

The speed role (``speed.role``) leaves out every valid event whose event time is before the watermark
of the micro-batch that reads it (``cached_records.behind``: Spark's watermark from the offset-log
entry, computed from the earlier micro-batches' largest event time); ``ops.stream_progress`` counts
them (``rows_dropped_by_watermark``). ``append`` writes those same events, by the same condition on
the same cached records, so the count and the rows agree: one row per Kafka record and window it
missed (``window_kinds.missed``: a sliding window's event misses every window it belongs to, since
the speed layer adds it to none; a session pipeline's event, the session it would have opened), with:

* ``lateness_ms``: the watermark minus the event time, in milliseconds (> 0; >= 0 for a session
  pipeline, whose stateful query drops an event AT the watermark too);
* ``watermark``, ``batch_id``, ``speed_version``, ``lineage`` (the checkpoint's query id);
* ``window_key`` (``to_json`` of the keys), ``window_start``, ``window_end``: the ledger's window key.

Exactly once, like the micro-batch's other writes: one plain append per micro-batch that has late
events, tagged ``<lineage>/<micro-batch>``; a re-run micro-batch first asks whether it committed
(``io.rerun.committed_writes``, by the Kafka position of one late record). A new lineage of a version
starts by deleting the version's rows at or after its speed floors (``forget_from``): it reads those
records again, under a watermark of its own.

Session pipelines: their stateful ``speed`` query drops late events inside Spark's plan, by a watermark
and a comparison of its own; ``speed.session_late`` finds the same events again, from the micro-batch's
Kafka offset range, and writes them with ``late_events`` under the same tagging and re-run rules.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lakehouse import contracts
from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.io.delta_io import tagged_append
from spark_jobs.io.lineage import floor_sql
from spark_jobs.speed import micro_batch_values as batch_values
from spark_jobs.transforms.parse import valid_events


def late_events(records: Any, p: Pipeline, late_if: Any, wm: datetime, *, batch_id: int, version: int,
                lineage: str) -> Any:
    """The valid events of ``records`` for which ``late_if`` holds (the speed role's ``late``, or the
    session query's rule: ``speed.session_late``), one row per window each missed, in the ``late.<p>``
    contract's columns."""
    from pyspark.sql import functions as F

    spark = records.sparkSession
    watermark = batch_values.timestamp(spark, wm)
    late = valid_events(records.where(late_if))
    rows = late.select("*", kind_of(p.window).missed(p.window).alias("_window")).select(
        "*", F.col("kafka_timestamp").alias("arrival_time"), watermark.alias("watermark"),
        (F.unix_millis(watermark) - F.unix_millis("event_time")).alias("lateness_ms"),
        F.to_json(F.struct(*p.keys)).alias("window_key"), F.col("_window.start").alias("window_start"),
        F.col("_window.end").alias("window_end"), batch_values.whole_number(spark, batch_id).alias("batch_id"),
        F.lit(version).alias("speed_version"), F.lit(lineage).alias("lineage"))
    contract = contracts.late(p)
    return rows.select(*(F.col(c).cast(t).alias(c) for c, t in contract.columns))


def append(records: Any, p: Pipeline, late_if: Any, wm: datetime, *, batch_id: int, version: int,
           lineage: str) -> None:
    """One tagged append of the micro-batch's late events (the caller knows there are some)."""
    rows = late_events(records, p, late_if, wm, batch_id=batch_id, version=version, lineage=lineage)
    tagged_append(rows, contracts.late(p).name, f"{lineage}/{batch_id}")


def forget_from(spark: Any, p: Pipeline, version: int, floors: dict[str, int] | None) -> None:
    """Delete the version's late rows that a new lineage reads again: at or after its floors
    (partition -> first offset), or all of them when it starts from the beginning (no floors)."""
    spark.sql(f"DELETE FROM {contracts.late(p).name} WHERE speed_version = {int(version)} AND {floor_sql(floors)}")
