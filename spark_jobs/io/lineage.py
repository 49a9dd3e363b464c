"""Query lineages: what a streaming checkpoint says, and what a NEW checkpoint must do first.

A lineage is one checkpoint folder (``checkpoints/<p>/<query>_v<N>``); Spark stores its stable
query id in ``<checkpoint>/metadata``. Every idempotent Delta write carries that id in its
``txnAppId`` (``naming.txn_app_id``), so a new checkpoint can never be silently skipped by Delta
as "already written" (delta-io: a txnVersion at or below the last one of the same app id is
dropped). What a new lineage does with tables that already hold rows (the rule, also in
docs/architecture.md):

* ingest: each of ``bronze.<p>`` and ``quarantine.<p>`` resumes after what it holds, per partition
  (``ingest_floors``), so a deleted checkpoint neither skips nor doubles a record. The ingest role
  commits quarantine BEFORE bronze, so every unusable record up to bronze's last offset is in
  quarantine, whichever commit a kill -9 interrupted;
* speed: continues where the version's previous writer stopped (``spark_jobs.speed.lineages``), or,
  with no previous writer, starts from the earliest offsets and so recomputes every window: the table
  is emptied first; with ``starting_offsets: latest`` it would lose windows, so the start is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_admin import offsets
from spark_jobs.io.rerun import partials_written

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def batch_end_offsets(checkpoint: Path, batch_id: int, topic: str) -> dict[str, int]:
    """{partition: next offset} of ``topic`` at the end of one planned micro-batch (its offset-log entry)."""
    return {str(k): int(v) for k, v in offset_log_entry(checkpoint, batch_id)[1].get(topic, {}).items()}


def is_new(checkpoint: Path) -> bool:
    """True when the checkpoint has never planned a micro-batch (no offset log entry)."""
    offsets = checkpoint / "offsets"
    return not offsets.is_dir() or not any(f.name.isdigit() for f in offsets.iterdir())


def query_id(checkpoint: Path) -> str:
    """The stable id Spark gave the query of this checkpoint (exists once the query started)."""
    return str(json.loads((checkpoint / "metadata").read_text())["id"])


def committed_batches(checkpoint: Path) -> list[int]:
    commits = checkpoint / "commits"
    return sorted(int(f.name) for f in commits.iterdir() if f.name.isdigit()) if commits.is_dir() else []


def last_planned_batch(checkpoint: Path) -> int | None:
    """The highest micro-batch in the checkpoint's offset log (None: it never planned one)."""
    if is_new(checkpoint):
        return None
    return max(int(f.name) for f in (checkpoint / "offsets").iterdir() if f.name.isdigit())


def uncommitted_batch(checkpoint: Path) -> int | None:
    """The micro-batch a restart of this checkpoint's query runs again: planned in the offset log,
    missing from the commit log (None: the next micro-batch is new)."""
    planned = last_planned_batch(checkpoint)
    if planned is None:
        return None
    done = committed_batches(checkpoint)
    return planned if not done or planned > done[-1] else None


def offset_log_entry(checkpoint: Path, batch_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, Kafka source offsets) of one planned micro-batch: ``batchWatermarkMs``,
    ``batchTimestampMs`` and ``{topic: {partition: next offset}}``."""
    lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    meta = json.loads(lines[1])
    source = json.loads(lines[2]) if len(lines) > 2 and lines[2].startswith("{") else {}
    return meta, source


def held_offsets(spark: SparkSession, tables: list[str], topic: str) -> dict[str, int] | None:
    """Partition -> the offset after the highest one any of ``tables`` holds for ``topic``, or None
    if they hold nothing."""
    parts = " UNION ALL ".join(
        f"SELECT kafka_partition, max(kafka_offset) AS o FROM {t} WHERE kafka_topic = '{topic}' GROUP BY kafka_partition"
        for t in tables)
    held = {str(r["kafka_partition"]): int(r["o"]) + 1
            for r in spark.sql(f"SELECT kafka_partition, max(o) AS o FROM ({parts}) GROUP BY kafka_partition").collect()}
    return held or None


def ingest_floors(bronze: dict[str, int] | None, quarantine: dict[str, int] | None) -> dict[str, dict[str, int] | None]:
    """The ingest role's floors from what each table holds (partition -> offset after its highest).

    ``ingest`` (bronze, and where the stream starts) is bronze's own. ``quarantine`` is the higher of
    the two per partition: quarantine is committed before bronze within a micro-batch, so quarantine
    holds every unusable record below bronze's floor. (One floor over both tables lost the unusable
    records of a micro-batch cut short between its two commits when bronze was committed first.)"""
    merged = dict(bronze or {})
    for part, first in (quarantine or {}).items():
        merged[part] = max(first, merged.get(part, first))
    return {"ingest": bronze, "quarantine": merged or None}


def starting_json(topic: str, partitions: list[int], floors: list[dict[str, int] | None]) -> str:
    """Per partition the lowest of the floors (a missing floor or partition = -2, earliest)."""
    start = {str(p): min(-2 if not f or str(p) not in f else f[str(p)] for f in floors) for p in partitions}
    return json.dumps({topic: start})


def last_committed_offsets(checkpoint: Path, topic: str) -> dict[str, int] | None:
    """Partition -> next offset after the last committed micro-batch of a checkpoint."""
    done = committed_batches(checkpoint) if not is_new(checkpoint) else []
    if not done:
        return None
    return batch_end_offsets(checkpoint, done[-1], topic)


def last_planned_offsets(checkpoint: Path, topic: str) -> dict[str, int] | None:
    """Partition -> next offset after the last micro-batch the checkpoint PLANNED (its offset log),
    committed by Spark or not: the micro-batch's Delta commits may have landed while Spark's commit log
    entry did not (a graceful stop interrupts the micro-batch under way; a kill -9). What the query's
    tables can hold never goes past it."""
    planned = last_planned_batch(checkpoint)
    if planned is None:
        return None
    return batch_end_offsets(checkpoint, planned, topic)


def furthest(*offsets: dict[str, int] | None) -> dict[str, int] | None:
    """Per partition, the highest of several {partition: offset} maps (None: none of them has one)."""
    out: dict[str, int] = {}
    for each in offsets:
        for part, offset in (each or {}).items():
            out[part] = max(offset, out.get(part, offset))
    return out or None


def saved_floors_path(checkpoint: Path) -> Path:
    """Where a lineage keeps the floors it was started with (``stream_floors``)."""
    return checkpoint.parent / f"{checkpoint.name}.floors.json"


def stream_floors(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, version: int, checkpoint: Path,
                  roles: list[str], taken_over: dict[str, int] | None = None,
                  ) -> tuple[dict[str, dict[str, int] | None], str | None]:
    """The roles' floors (partition -> first offset a role still has to process) of the ``stream``
    query's lineage, and the ``startingOffsets`` a NEW checkpoint starts from (None: the configured
    one). Decided once per lineage and kept beside the checkpoint (``saved_floors_path``).

    ingest (and quarantine): after what bronze (quarantine) holds, ``ingest_floors``. speed: ``taken_over``,
    where the previous writer of the version's table stopped (``spark_jobs.speed.lineages.frontier``);
    without one, the table is recomputed from the start (emptied first, ``prepare_speed_table``)."""
    saved = saved_floors_path(checkpoint)
    if not is_new(checkpoint) and saved.exists():
        return json.loads(saved.read_text()), None
    floors: dict[str, dict[str, int] | None] = {}
    if "ingest" in roles:
        floors.update(ingest_floors(held_offsets(spark, [p.tables.bronze], p.topic),
                                    held_offsets(spark, [p.tables.quarantine], p.topic)))
    if "speed" in roles:
        floors["speed"] = taken_over
        if taken_over is None:
            prepare_speed_table(spark, contracts.storage_table(p, version),
                                cfg.kafka.starting_offsets if "ingest" in roles else "earliest")
    start = (starting_json(p.topic, sorted(offsets(cfg, p.topic)), list(floors.values()))
             if any(floors.values()) else None)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(floors))
    return floors, start


def taken_over_offsets(spark: SparkSession, p: Pipeline, version: int, replayed: Path, topic: str) -> dict[str, int] | None:
    """Where a new lineage takes over a speed table from the lineage ``replayed``: after its last committed
    micro-batch, or after the one it was stopped in if that one's partials append had landed (a stop can
    interrupt a micro-batch after its write and before its commit; taking over before it would count it twice)."""
    pending = uncommitted_batch(replayed)
    if pending is not None and partials_written(spark, p, version, query_id(replayed), pending):
        return batch_end_offsets(replayed, pending, topic)
    return last_committed_offsets(replayed, topic)


def prepare_speed_table(spark: SparkSession, table: str, starting_offsets: str) -> bool:
    """Before a new speed lineage writes ``table``: empty it (True) if it holds rows, or refuse."""
    if not spark.sql(f"SELECT 1 FROM {table} LIMIT 1").collect():
        return False
    if starting_offsets != "earliest":
        raise TidewaterError(f"speed: {table} holds rows but its checkpoint is new and starting_offsets is "
                             f"'{starting_offsets}', so windows would be lost; set kafka.starting_offsets: earliest, "
                             "or rebuild into a new version with 'tidewater replay'")
    spark.sql(f"DELETE FROM {table}")
    return True


def floor_sql(floors: dict[str, int] | None) -> str:
    """SQL: the record is at or after its partition's floor offset (true without floors)."""
    if not floors:
        return "true"
    cases = " ".join(f"WHEN {int(part)} THEN {int(first)}" for part, first in floors.items())
    return f"kafka_offset >= CASE kafka_partition {cases} ELSE 0 END"


def from_floor(df: Any, floors: dict[str, int] | None) -> Any:
    """Rows at or after each partition's floor offset (all rows without floors)."""
    return df.where(floor_sql(floors)) if floors else df
