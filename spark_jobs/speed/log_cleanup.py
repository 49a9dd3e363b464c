"""Expired Delta log files of a running stream's tables, deleted as the stream goes.

Each micro-batch commits to bronze, quarantine (when it has unusable records), the partials table (a
session pipeline: its speed table) and ``ops.stream_progress``, and each commit leaves a JSON and a ``.crc`` file in the table's
``_delta_log``. Before every commit Delta lists that folder, and on a local or HDFS-like file system
it lists ALL of it (``HadoopFileSystemLogStore.listFrom``). Delta itself deletes log files only after
a checkpoint and only those older than ``delta.logRetentionDuration`` (30 days unless set) truncated to
the previous midnight, so a level stream's folder grows by tens of thousands of files a day, and
every append with it. Measured (``benchmarks/delta_log_growth``, a 500-row append by location): alone
0.45 s with 17 files, 2.13 s with 50,000; under load 0.9 s with 43 files, 8.3 s with 50,000, 31.1 s with 200,000.

Every ``CLEAN_EVERY`` micro-batches (the streamed tables checkpoint every 100 commits, and nothing
before the latest checkpoint can go sooner) a thread deletes, by Delta's own rules
(``MetadataCleanup.cleanUpExpiredLogs``: complete checkpoints kept, versions after the latest
checkpoint kept), the log files older than:

* ``KEEP_SECONDS`` for the partials table, a session pipeline's speed table, quarantine and
  ``ops.stream_progress``: a re-run micro-batch reads only its own commits (or none), which are newer
  than the latest checkpoint or the cleanup;
* for bronze in lambda mode, the checkpoint that the batch layer's oldest needed version is read from
  (the latest published run's bronze version: the next incremental run reads the Change Data Feed
  after it, its reconciliation reads it; else the oldest staged run's) minus ``BRONZE_MARGIN_SECONDS``;
  nothing when no checkpoint precedes that version; now minus the margin when no run needs one. In
  kappa mode nothing reads bronze by version, and bronze keeps ``KEEP_SECONDS`` like the others.

Time travel on these tables reaches back only that far (``docs/operations.md``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from lakehouse import contracts, naming
from lakehouse.run_records import BatchRun
from spark_jobs.io import batch_runs
from spark_jobs.io.delta_io import table_log_dir
from spark_jobs.shared.background import BACKGROUND_POOL, Background

CLEAN_EVERY = 100
KEEP_SECONDS = 600
BRONZE_MARGIN_SECONDS = 3600


def due(batch_id: int) -> bool:
    return batch_id % CLEAN_EVERY == CLEAN_EVERY - 1


def bronze_keep_after(now: datetime, mode: str, anchor: datetime | None) -> datetime:
    """Bronze log files older than this may go (see the module's text); ``anchor``: when the checkpoint
    that the protected version is read from was written (None: no version is protected)."""
    if mode == "kappa":
        return now - timedelta(seconds=KEEP_SECONDS)
    start = anchor if anchor is not None and anchor < now else now
    return start - timedelta(seconds=BRONZE_MARGIN_SECONDS)


def log_files(log_dir: Any) -> int:
    return sum(1 for f in log_dir.iterdir() if f.suffix in (".json", ".crc", ".parquet"))


def clean_expired(spark: Any, table: str, keep_after: datetime) -> tuple[int, int]:
    """Delete ``table``'s log files older than ``keep_after`` (to the minute) that Delta's rules let go;
    returns the log files before and after."""
    log_dir = table_log_dir(spark, table)
    if log_dir is None:
        return 0, 0
    before = log_files(log_dir)
    jvm = spark._jvm
    delta = jvm.org.apache.spark.sql.delta
    none = jvm.scala.Option.empty()
    delta_log = delta.DeltaLog.forTable(spark._jsparkSession, str(log_dir.parent))
    snapshot = delta_log.update(False, none, none)
    retention_ms = max(0, int((time.time() - keep_after.timestamp()) * 1000))
    # an Option[Long] built on the JVM side: py4j would pass a Python int as an Integer
    string_ops = getattr(getattr(jvm.scala.collection, "StringOps$"), "MODULE$")
    retention = getattr(string_ops, "toLongOption$extension")(str(retention_ms))
    minute = getattr(getattr(delta, "TruncationGranularity$"), "MODULE$").MINUTE()
    delta_log.cleanUpExpiredLogs(snapshot, none, retention, minute)
    return before, log_files(log_dir)


def protected_bronze_version(runs: list[BatchRun]) -> int | None:
    """The oldest bronze version the batch layer will still read: the latest published run's (the next
    incremental run's Change Data Feed starts after it, its reconciliation reads it), else the oldest
    staged or validated (not yet published) run's; None when no run needs one (pure)."""
    latest = batch_runs.latest_published(runs)
    if latest is not None:
        return int(latest.bronze_version)
    staged = [int(r.bronze_version) for r in runs if r.status in batch_runs.PENDING]
    return min(staged) if staged else None


def checkpoint_before(log_dir: Any, version: int) -> Any:
    """The newest checkpoint file of ``log_dir`` at or before ``version`` (None: none), which reading
    that version starts from."""
    found = [(int(f.name[:20]), f) for f in log_dir.glob("*.checkpoint*.parquet") if f.name[:20].isdigit()]
    older = [pair for pair in found if pair[0] <= version]
    return max(older, key=lambda pair: pair[0])[1] if older else None


def bronze_cutoff(spark: Any, pipeline: str, mode: str, now: datetime) -> datetime | None:
    """``bronze_keep_after`` for the pipeline, anchored at the checkpoint the protected version is read
    from; None when bronze must not be cleaned (no checkpoint at or before that version: only the
    whole log rebuilds it)."""
    if mode == "kappa":
        return bronze_keep_after(now, mode, None)
    runs = batch_runs.runs(spark, pipeline) if spark.catalog.tableExists(batch_runs.TABLE) else []
    version = protected_bronze_version(runs)
    if version is None:
        return bronze_keep_after(now, mode, None)
    log_dir = table_log_dir(spark, naming.table("bronze", pipeline))
    checkpoint = None if log_dir is None else checkpoint_before(log_dir, version)
    if checkpoint is None:
        return None
    return bronze_keep_after(now, mode, datetime.fromtimestamp(checkpoint.stat().st_mtime, UTC))


def stream_tables(pipeline: str, roles: list[str], own: str | None) -> list[str]:
    """The tables one streaming query commits to, whose logs its cleanup runs cover (pure): ``own``
    (the partials table of a stateless stream, the speed table of a session pipeline's speed query)
    with ``ops.stream_progress``, and with the ingest role quarantine and bronze."""
    tables = [own, contracts.STREAM_PROGRESS.name] if own is not None else []
    if "ingest" in roles:
        tables += [naming.table("quarantine", pipeline), naming.table("bronze", pipeline)]
    return tables


class LogCleanup:
    """A stream's cleanups: every ``CLEAN_EVERY`` micro-batches one run over ``tables``, on a thread of
    its own in the background pool, never two at once. A failed run is printed and the stream goes on:
    the log folders are then only as large as Delta alone would leave them."""

    def __init__(self, spark: Any, pipeline: str, tables: list[str], mode: str) -> None:
        self.spark, self.pipeline, self.tables, self.mode = spark, pipeline, tables, mode
        self.run: Any = None

    def maybe_start(self, batch_id: int) -> None:
        if not due(batch_id) or (self.run is not None and self.run.thread.is_alive()):
            return
        self.run = Background(self.clean, pool=BACKGROUND_POOL)

    def clean(self) -> None:
        now = datetime.now(UTC)
        bronze = naming.table("bronze", self.pipeline)
        try:
            done = []
            for table in self.tables:
                keep_after = (bronze_cutoff(self.spark, self.pipeline, self.mode, now) if table == bronze
                              else now - timedelta(seconds=KEEP_SECONDS))
                if keep_after is None:
                    done.append(f"{table} kept (no checkpoint precedes the version the batch layer reads)")
                    continue
                before, after = clean_expired(self.spark, table, keep_after)
                done.append(f"{table} {before} -> {after}")
            print(f"stream: log cleanup: files in _delta_log {', '.join(done)}", flush=True)
        except Exception as exc:  # housekeeping: the stream goes on, loudly
            print(f"stream: log cleanup failed: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}", flush=True)
