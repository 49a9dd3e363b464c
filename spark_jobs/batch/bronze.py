"""What a batch run reads of bronze: one snapshot (a Delta version), the rows added since a version
(Change Data Feed), its statistics from the Delta log, and the cutoff they give; and the Spark-free
checks that an empty pipeline, or one whose bronze has not changed since its last published run, has
nothing to stage."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lakehouse.config import TidewaterConfig
from lakehouse.errors import NothingToDo
from lakehouse.pipeline import Pipeline
from spark_jobs.io import batch_runs
from spark_jobs.io.delta_io import latest_version, table_version
from spark_jobs.io.ops_reader import live_files, read_rows, table_path
from spark_jobs.io.ops_reader import snapshot_stats as log_stats

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def bronze_snapshot(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline) -> tuple[int, DataFrame]:
    """Bronze's newest version and the frame of that snapshot. The version comes from the table's log
    folder (the newest commit file, as ``snapshot_stats`` reads it), not from ``DESCRIBE HISTORY``: a
    Spark job of 0.4-0.8 s per run on 2 busy cores; Spark's answer only where there is no log folder."""
    table = p.tables.bronze
    version = latest_version(table_path(cfg, table))
    if version < 0:
        version = table_version(spark, table)
    return version, spark.read.option("versionAsOf", version).table(table)


def bronze_changes(spark: SparkSession, p: Pipeline, after: int, upto: int) -> DataFrame:
    """Rows inserted into bronze in versions ``after+1 .. upto`` (Change Data Feed)."""
    df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", after + 1)
          .option("endingVersion", upto).table(p.tables.bronze))
    return df.where("_change_type = 'insert'").drop("_change_type", "_commit_version", "_commit_timestamp")


def changes_gone(cfg: TidewaterConfig, p: Pipeline, after: int, upto: int) -> str | None:
    """Why bronze's Change Data Feed for versions ``after+1 .. upto`` can no longer be read (None: it can):
    a commit's log file was cleaned up, or a data file such a commit added is gone (VACUUM removes the
    files a compaction replaced once they are older than its retention). Read from the Delta log and the
    file system, so an incremental run falls back to a full one before any Spark job fails on it."""
    root = table_path(cfg, p.tables.bronze)
    missing = 0
    for version in range(after + 1, upto + 1):
        log = root / "_delta_log" / f"{version:020d}.json"
        if not log.exists():
            return f"bronze's Delta log no longer holds version {version} (log retention)"
        for line in log.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            added = action.get("add") if (action.get("add") or {}).get("dataChange", True) else None
            for entry in (added, action.get("cdc")):
                if entry and "://" not in entry["path"] and not (root / unquote(entry["path"])).exists():
                    missing += 1
    if missing:
        return f"{missing} data files that bronze versions {after + 1}-{upto} added are gone (VACUUM)"
    return None


def snapshot_stats(cfg: TidewaterConfig, p: Pipeline, version: int) -> dict[str, Any] | None:
    """Rows, latest event time and latest arrival of bronze at ``version``, from its Delta log's file
    statistics instead of a scan (exact: both columns hold whole milliseconds, which is what Delta's
    statistics keep); None when the log cannot tell."""
    found = log_stats(table_path(cfg, p.tables.bronze), version, ["event_time", "kafka_timestamp"])
    if found is None:
        return None
    return {"n": found["num_records"], "top": found["event_time"], "arrived": found["kafka_timestamp"]}


def batch_cutoff(max_event_time: datetime, max_arrival: datetime | None, lateness_seconds: int) -> datetime:
    """Windows ending at or before the cutoff count as complete. Event time can run ahead of the
    clock (a producer's clock up to ``max_future_skew`` fast); the last arrival (the broker's clock)
    cannot, so the cutoff follows the earlier of the two."""
    top = max_event_time if max_arrival is None else min(max_event_time, max_arrival)
    return top - timedelta(seconds=lateness_seconds)


def bronze_empty(p: Pipeline) -> NothingToDo:
    return NothingToDo(f"batch: {p.tables.bronze} is empty; start the speed layer "
                       f"('tidewater speed start {p.name}') and produce events first")


def require_bronze_rows(cfg: TidewaterConfig, p: Pipeline) -> None:
    """Spark-free: NothingToDo when bronze has no live data file (or does not exist yet), read from
    its ``_delta_log``, so an empty pipeline's run ends in milliseconds, before any JVM or the job
    service is reached. A table with files goes on to ``_stage``, whose row count decides."""
    if not live_files(table_path(cfg, p.tables.bronze)):
        raise bronze_empty(p)


def require_bronze_change(cfg: TidewaterConfig, p: Pipeline) -> None:
    """Spark-free: NothingToDo when bronze has no commit since the bronze version the latest published run
    read (its log folder against ``ops.batch_runs``' files), so an hourly run of an idle pipeline ends in
    milliseconds instead of staging, auditing and recording a run of no windows. Nothing can differ: the
    new events and the cutoff both come from bronze. A commit that adds no rows (OPTIMIZE) still runs."""
    bronze = p.tables.bronze
    version = latest_version(table_path(cfg, bronze))
    # runs publish in staging order and each reads the newest bronze, so a published run at this version
    # is the latest published run (no timestamps read: they would cost pandas' import)
    done = [r["run_id"] for r in read_rows(cfg, batch_runs.TABLE, ["run_id", "pipeline", "status", "bronze_version"])
            if r["pipeline"] == p.name and r["status"] == "published" and r["bronze_version"] == version]
    if done and version >= 0:
        raise NothingToDo(f"batch: {bronze} is still at v{version}, which run {done[-1]} published; nothing "
                          f"to recompute ('tidewater batch {p.name} --full' recomputes every window anyway)")
