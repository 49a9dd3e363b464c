"""The stream's Delta log cleanup (``spark_jobs.speed.log_cleanup``) on a real Delta table.

A table checkpointed every 10 commits gets 25 appends; the log files of its first 15 versions are
made three hours old. (in commit order, as real commits are: Delta's cleanup adjusts equal times and then
deletes nothing). The cleanup with a ten-minute horizon must delete old files, keep every file from
the latest checkpoint on and every recent one, and leave the table whole and writable.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration
TABLE = "bronze.log_cleanup_probe"


def test_expired_log_files_go_and_the_table_stays_whole(spark: SparkSession, stack: TidewaterConfig) -> None:
    from spark_jobs.io.delta_io import table_log_dir, tagged_append
    from spark_jobs.speed.log_cleanup import clean_expired

    spark.sql(f"CREATE TABLE {TABLE} (id BIGINT) USING delta TBLPROPERTIES ('delta.checkpointInterval' = '10')")
    for n in range(25):  # versions 1..25; checkpoints at 10 and 20
        tagged_append(spark.range(n * 10, n * 10 + 10), TABLE, f"probe/{n}")
    log_dir = table_log_dir(spark, TABLE)
    assert log_dir is not None
    old = time.time() - 3 * 3600
    for f in log_dir.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) < 15:  # in commit order, as real commits are
            os.utime(f, (old + int(f.name[:20]), old + int(f.name[:20])))
    before_names = {f.name for f in log_dir.iterdir()}
    assert f"{0:020d}.json" in before_names and f"{20:020d}.checkpoint.parquet" in before_names

    before, after = clean_expired(spark, TABLE, datetime.now(UTC) - timedelta(minutes=10))

    names = {f.name for f in log_dir.iterdir()}
    assert before > after, (before, after, sorted(names))
    assert f"{0:020d}.json" not in names and f"{9:020d}.json" not in names, sorted(names)
    assert f"{5:020d}.crc" not in names and f".{5:020d}.json.crc" not in names, sorted(names)  # checksums too
    kept = {f"{v:020d}.json" for v in range(15, 26)} | {f"{20:020d}.checkpoint.parquet"}
    assert kept <= names, sorted(kept - names)
    assert spark.table(TABLE).count() == 250
    tagged_append(spark.range(250, 260), TABLE, "probe/after")
    assert spark.table(TABLE).agg({"id": "max"}).collect()[0][0] == 259


def test_a_streams_cleanup_run_covers_its_tables_and_reports_them(spark: SparkSession, stack: TidewaterConfig,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """What the speed job runs every 100 micro-batches: its partials table (here the probe table),
    ``ops.stream_progress``, and with the ingest role quarantine and bronze; tables that do not exist
    are reported as empty, and a run never raises into the stream."""
    from lakehouse import contracts
    from spark_jobs.speed.log_cleanup import LogCleanup, stream_tables

    cleanup = LogCleanup(spark, "no_such_pipeline", stream_tables("no_such_pipeline", ["ingest", "speed"], TABLE), "lambda")
    cleanup.maybe_start(99)
    assert cleanup.run is not None
    cleanup.run.join()
    line = [s for s in capsys.readouterr().out.splitlines() if s.startswith("stream: log cleanup")]
    assert len(line) == 1 and "failed" not in line[0], line
    for table in (TABLE, contracts.STREAM_PROGRESS.name, "quarantine.no_such_pipeline", "bronze.no_such_pipeline"):
        assert f"{table} " in line[0], line
    previous = cleanup.run
    cleanup.maybe_start(100)  # not a block's end: nothing new starts
    assert cleanup.run is previous


def test_maintenance_vacuum_honours_its_retention(spark: SparkSession, stack: TidewaterConfig) -> None:
    """``tidewater maintenance --retention-hours N`` keeps N hours of files no version references. Delta 4.x
    ignores a ``RETAIN`` other than 0 by default (keeping its 7-day table default instead); ``vacuum_settings``
    turns that off. Stray files written 180 hours ago (a failed write's, say): kept with 200 hours, listed
    for deletion with 170."""
    import shutil
    from pathlib import Path
    from urllib.parse import urlparse

    from spark_jobs.maintenance.job import _optimize_and_vacuum, vacuum_settings

    table = "bronze.vacuum_probe"
    spark.range(10).repartition(2).write.format("delta").saveAsTable(table)
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    assert detail is not None
    root = Path(urlparse(detail["location"]).path)
    live = [Path(urlparse(f).path) for f in spark.table(table).inputFiles()]
    strays = [root / f"part-9999{i}-stray.snappy.parquet" for i in range(len(live))]
    long_ago = time.time() - 180 * 3600
    for source, stray in zip(live, strays, strict=True):
        shutil.copyfile(source, stray)
        os.utime(stray, (long_ago, long_ago))
    key = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
    default = spark.conf.get(key)
    with vacuum_settings(spark):
        assert int(spark.conf.get(key) or 0) < 100  # a listing of a few files in a few tasks, not 10,000
        assert _optimize_and_vacuum(spark, table, 200, dry_run=True)["vacuumed"] == 0
        assert _optimize_and_vacuum(spark, table, 170, dry_run=True)["vacuumed"] == len(strays) == 2
    assert spark.conf.get(key) == default
    spark.sql(f"DROP TABLE {table}")


def compact_quietly(spark: SparkSession, table: str) -> None:
    """The rival compaction: when it is the one that loses the race, its conflict is not this test's error."""
    with contextlib.suppress(Exception):
        spark.sql(f"OPTIMIZE {table}").collect()


def test_maintenance_retries_a_conflicting_optimize_and_goes_on(spark: SparkSession, stack: TidewaterConfig) -> None:
    """An OPTIMIZE that loses to a concurrent compaction of the same table (Delta: both remove the same
    files, ``DELTA_CONCURRENT_DELETE_DELETE``) is retried instead of ending the run, and a table that
    cannot be maintained at all is reported while the tables after it are still maintained."""
    import threading

    from spark_jobs.maintenance.job import maintained, vacuum_settings

    table, other = "bronze.conflict_probe", "bronze.after_conflict_probe"
    retried: list[dict[str, object]] = []
    rounds = 0
    with vacuum_settings(spark):
        while not retried and rounds < 6:  # until the race is lost once: it is, nearly every round
            rounds += 1
            spark.sql(f"DROP TABLE IF EXISTS {table}")
            spark.range(4000).repartition(60).write.format("delta").saveAsTable(table)
            rival = threading.Thread(target=compact_quietly, args=(spark, table))
            rival.start()
            row = maintained(spark, table, 200, dry_run=False)
            rival.join(120)
            assert "error" not in row, row
            if row["attempts"] > 1:
                retried.append(row)
        assert retried, f"no OPTIMIZE conflict in {rounds} rounds of two concurrent compactions"
        assert spark.table(table).count() == 4000
        assert len(spark.table(table).inputFiles()) == 1  # compacted, by one of the two

        spark.range(100).repartition(5).write.format("delta").saveAsTable(other)
        gone = maintained(spark, "bronze.no_such_table_probe", 200, dry_run=False)
        assert gone["attempts"] == 1 and "no_such_table_probe" in gone["error"]  # reported, not retried
        assert "error" not in maintained(spark, other, 200, dry_run=False)
        assert len(spark.table(other).inputFiles()) == 1
    for t in (table, other):
        spark.sql(f"DROP TABLE {t}")
