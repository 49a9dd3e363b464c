"""Exactly once without ``txnAppId``: which writes of a re-run micro-batch already committed.

Spark re-runs a micro-batch only when a query starts: the one its offset log holds and its commit
log does not (a crash, kill -9 or failure cut it short; ``lineage.uncommitted_batch``, read before
the query starts). Every other micro-batch is new. So ``StreamBatch`` asks, for that micro-batch
only, which of its writes exist already, and writes only the others; every other micro-batch appends
plainly. (Delta's ``txnAppId``/``txnVersion`` gives the same guarantee but costs two state
reconstructions per write: 0.69 s against 0.29 s per small append, measured on 2 cores.)

Each write is one atomic Delta commit, so one row of it proves all of it:

* bronze / quarantine: one valid / unusable record of the micro-batch, by Kafka partition and offset;
* partials: a row of this lineage (checkpoint query id) with this or a later ``batch_id`` (a
  compaction keeps the lineage and batch id of each window's latest append);
* ``ops.stream_progress``: the micro-batch's row for this lineage (``run_id`` = query id);
* ``late.<p>``: a row of this speed version at the Kafka position of one late record of the micro-batch.
"""

from __future__ import annotations

from typing import Any

from lakehouse import contracts, naming
from lakehouse.pipeline import Pipeline


def _exists(spark: Any, table: str, where: str) -> bool:
    return bool(spark.sql(f"SELECT 1 FROM {table} WHERE {where} LIMIT 1").collect())


def _record_at(position: Any) -> str:
    return f"kafka_partition = {int(position['kafka_partition'])} AND kafka_offset = {int(position['kafka_offset'])}"


def partials_written(spark: Any, p: Pipeline, version: int, lineage: str, batch_id: int) -> bool:
    partials = contracts.speed(p, version).requires
    return bool(partials) and _exists(spark, partials[0].name, f"lineage = '{lineage}' AND batch_id >= {int(batch_id)}")


def committed_writes(spark: Any, p: Pipeline, version: int, lineage: str, batch_id: int, stats: Any) -> set[str]:
    """The sinks (``bronze``, ``quarantine``, ``partials``, ``ops``, ``late``) holding micro-batch
    ``batch_id`` already. ``stats`` has ``valid_at`` / ``bad_at`` / ``late_at``: one record of each kind
    (None if none)."""
    done = set()
    for sink, position in (("bronze", stats["valid_at"]), ("quarantine", stats["bad_at"])):
        if position is not None and _exists(spark, naming.table(sink, p.name), _record_at(position)):
            done.add(sink)
    late = stats["late_at"]
    if late is not None and _exists(spark, p.tables.late,
                                    f"speed_version = {int(version)} AND {_record_at(late)}"):
        done.add("late")
    if partials_written(spark, p, version, lineage, batch_id):
        done.add("partials")
    if progress_written(spark, p.name, lineage, batch_id):
        done.add("ops")
    return done


def progress_written(spark: Any, pipeline: str, lineage: str, batch_id: int) -> bool:
    """Whether ``ops.stream_progress`` holds the rows of micro-batch ``batch_id`` of ``lineage``."""
    return _exists(spark, contracts.STREAM_PROGRESS.name,
                   f"pipeline = '{pipeline}' AND run_id = '{lineage}' AND batch_id = {int(batch_id)}")
