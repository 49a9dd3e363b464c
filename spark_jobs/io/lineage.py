"""Query lineages: what a streaming checkpoint says, and what a NEW checkpoint must do first.

A lineage is one checkpoint folder (``checkpoints/<p>/<query>_v<N>``); Spark stores its stable
query id in ``<checkpoint>/metadata``. Every idempotent Delta write carries that id in its
``txnAppId`` (``naming.txn_app_id``), so a new checkpoint can never be silently skipped by Delta
as "already written" (delta-io: a txnVersion at or below the last one of the same app id is
dropped). What a new lineage does with tables that already hold rows (the rule, also in
docs/architecture.md):

* ingest: resumes after the last Kafka offset that ``bronze.<p>`` or ``quarantine.<p>`` already
  holds, per partition, so a deleted checkpoint neither skips nor doubles a record;
* speed: starts from the earliest offsets and so recomputes every window: the table is emptied
  first; with ``starting_offsets: latest`` it would lose windows, so the start is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse.errors import TidewaterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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


def offset_log_entry(checkpoint: Path, batch_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, Kafka source offsets) of one planned micro-batch: ``batchWatermarkMs``,
    ``batchTimestampMs`` and ``{topic: {partition: next offset}}``."""
    lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    meta = json.loads(lines[1])
    source = json.loads(lines[2]) if len(lines) > 2 and lines[2].startswith("{") else {}
    return meta, source


def resume_offsets(spark: SparkSession, tables: list[str], topic: str, partitions: list[int]) -> str | None:
    """``startingOffsets`` JSON that continues after the highest offset any of ``tables`` holds for
    ``topic`` (-2 = earliest for a partition without rows), or None if they hold nothing."""
    parts = " UNION ALL ".join(
        f"SELECT kafka_partition, max(kafka_offset) AS o FROM {t} WHERE kafka_topic = '{topic}' GROUP BY kafka_partition"
        for t in tables)
    held = {int(r["kafka_partition"]): int(r["o"])
            for r in spark.sql(f"SELECT kafka_partition, max(o) AS o FROM ({parts}) GROUP BY kafka_partition").collect()}
    if not held:
        return None
    return json.dumps({topic: {str(p): held[p] + 1 if p in held else -2 for p in sorted(set(partitions) | set(held))}})


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
