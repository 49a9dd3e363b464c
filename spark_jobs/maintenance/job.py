"""Housekeeping of the lakehouse (``tidewater maintenance``), safe to re-run at any time.

* ``tables``: Delta ``OPTIMIZE`` then ``VACUUM ... RETAIN N HOURS`` on every Delta table of the
  layer databases; N is never below 168 h (Delta's own safety limit, which keeps files that
  running readers and streaming checkpoints may still need). A commit conflict with a concurrent
  writer is retried; a table that still fails is reported and the run goes on (``maintained``).
* ``ops``: deletes ``ops.*`` rows older than N days (each table's own time column).
* ``checkpoints``: removes checkpoint folders of retired speed-query versions: every
  ``speed_v<N>``/``stream_v<N>`` lineage other than those of the active version (``lakehouse.speed_versions``) and the previous one
  (kept for rollback); nothing while a replay job is running. The ingest query (always v1) is never touched.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.speed_versions import active_version, previous_version
from spark_jobs.speed.control import replay_running

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_RETENTION_HOURS = 168
CONFLICT_ATTEMPTS = 3
# Delta's optimistic-concurrency conflicts (error classes DELTA_CONCURRENT_*; ConcurrentDeleteDeleteException, ...)
CONFLICT = re.compile(r"DELTA_CONCURRENT_|Concurrent\w*Exception")
OPS_TIME_COLUMNS = {"stream_progress": "recorded_at", "batch_runs": "staged_at", "reconciliation": "recorded_at"}
# a checkpoint of any lineage of a version (``naming.checkpoint_dir``), and its warm-up scratch table
_SPEED_CHECKPOINT = re.compile(r"^(?:speed|stream)_v(\d+)(?:-l\d+)?(?:\.warm-up)?$")


def delta_tables(spark: SparkSession) -> list[str]:
    """Every Delta table (not views) in the layer databases."""
    out = []
    for db in naming.LAYERS:
        if not spark.catalog.databaseExists(db):
            continue
        for t in spark.catalog.listTables(db):
            if t.tableType != "VIEW" and _is_delta(spark, f"{db}.{t.name}"):
                out.append(f"{db}.{t.name}")
    return sorted(out)


def _is_delta(spark: SparkSession, table: str) -> bool:
    try:
        return str(spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["format"]) == "delta"
    except Exception:  # not a Delta table (or vanished): nothing to maintain
        return False


def require_safe_retention(retention_hours: int) -> None:
    if retention_hours < MIN_RETENTION_HOURS:
        raise TidewaterError(f"maintenance: retention {retention_hours} h is below the safe minimum "
                             f"{MIN_RETENTION_HOURS} h; use --retention-hours {MIN_RETENTION_HOURS} or more")


def require_ops_retention(days: int) -> None:
    if days < 1:
        raise TidewaterError(f"maintenance: ops retention {days} days is too short; use --ops-retention-days 1 or more")


@contextlib.contextmanager
def vacuum_settings(spark: SparkSession) -> Iterator[None]:
    """Session settings for VACUUM, restored afterwards:

    * ``RETAIN N HOURS`` is honoured. Delta 4.x ignores any retention but 0 unless
      ``vacuum.retentionWindowIgnore.enabled`` is off, and keeps the table's
      ``delta.deletedFileRetentionDuration`` (7 days) instead, with one WARN in the job's log:
      ``--retention-hours 720`` kept 7 days of history, not 30.
    * Its file listing runs in a few tasks. It is split into
      ``spark.sql.sources.parallelPartitionDiscovery.parallelism`` tasks, 10,000 by default, which took
      25-50 s per table on 2 cores for a handful of files (22 tables: 684 s; now 1-2 s per table)."""
    wanted = {"spark.databricks.delta.vacuum.retentionWindowIgnore.enabled": "false",
              "spark.sql.sources.parallelPartitionDiscovery.parallelism":
                  str(max(8, 4 * spark.sparkContext.defaultParallelism))}
    before = {key: spark.conf.get(key, None) for key in wanted}
    for key, value in wanted.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def optimize_and_vacuum(spark: SparkSession, retention_hours: int, dry_run: bool = False) -> list[dict[str, Any]]:
    """Every Delta table's OPTIMIZE + VACUUM (``maintained``): a table that fails is reported in its row
    (``error``), and the others are still maintained."""
    require_safe_retention(retention_hours)
    with vacuum_settings(spark):
        return [maintained(spark, table, retention_hours, dry_run) for table in delta_tables(spark)]


def maintained(spark: SparkSession, table: str, retention_hours: int, dry_run: bool,
               attempts: int = CONFLICT_ATTEMPTS) -> dict[str, Any]:
    """One table's OPTIMIZE + VACUUM. A commit conflict with a concurrent writer of the table (another
    compaction, a DELETE) is retried, up to ``attempts`` in all; a table that still fails, or fails any
    other way, is reported with its error (one line) instead of ending the maintenance run."""
    for attempt in range(1, attempts + 1):
        try:
            return {**_optimize_and_vacuum(spark, table, retention_hours, dry_run), "attempts": attempt}
        except Exception as exc:
            text = str(exc).strip()
            if attempt == attempts or not CONFLICT.search(text):
                return {"table": table, "attempts": attempt, "error": text.splitlines()[0][:500] if text else repr(exc)}
            time.sleep(attempt)
    raise AssertionError("unreachable: the last attempt returns")


def _optimize_and_vacuum(spark: SparkSession, table: str, retention_hours: int, dry_run: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"table": table}
    if not dry_run:
        metrics = spark.sql(f"OPTIMIZE {table}").collect()[0]["metrics"]
        row["files_removed"] = int(metrics["numFilesRemoved"])
        row["files_added"] = int(metrics["numFilesAdded"])
    vacuum = f"VACUUM {table} RETAIN {retention_hours} HOURS{' DRY RUN' if dry_run else ''}"
    row["vacuumed"] = spark.sql(vacuum).count() if dry_run else "done"
    return row


def ops_retention(spark: SparkSession, days: int, dry_run: bool = False) -> dict[str, int]:
    require_ops_retention(days)
    deleted = {}
    for name, column in OPS_TIME_COLUMNS.items():
        table = naming.ops_table(name)
        if not spark.catalog.tableExists(table):
            continue
        predicate = f"{column} < current_timestamp() - INTERVAL {int(days)} DAYS"
        old = spark.table(table).where(predicate).count()
        if old and not dry_run:
            spark.sql(f"DELETE FROM {table} WHERE {predicate}")
        deleted[table] = old
    return deleted


def retired_checkpoints(cfg: TidewaterConfig, pipeline: str, active: int) -> list[Path]:
    """Speed-query checkpoint folders of versions other than the active one and the rollback target."""
    root = naming.checkpoint_dir(cfg, pipeline, "speed", active).parent
    keep = {active, previous_version(cfg, pipeline, active)}
    out = []
    for folder in sorted(root.glob("*_v*")) if root.is_dir() else []:
        match = _SPEED_CHECKPOINT.match(folder.name)
        if match and int(match.group(1)) not in keep:
            out.append(folder)
    return out


def clean_checkpoints(cfg: TidewaterConfig, pipelines: list[str], dry_run: bool = False) -> list[str]:
    removed = []
    for pipeline in pipelines:
        active = active_version(cfg, pipeline)
        if replay_running(cfg, pipeline):
            continue  # a replay is writing a new version right now: leave everything alone
        for folder in retired_checkpoints(cfg, pipeline, active):
            if not dry_run:
                shutil.rmtree(folder)
            removed.append(str(folder))
    return removed
