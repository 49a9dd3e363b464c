"""The stage of a batch run (``compute_stage``): exact windows from bronze, computed into staging.

Read one bronze snapshot (Delta version V), deduplicate on the event id (full runs: over
the whole history, ranking only the copies of repeated ids, ``batch.dedup``; incremental runs: only
the events the touched windows need, each against its own id's copies) and run the shared ``windowed_aggregate(p, streaming=False)``. The cutoff is the largest
event time in the snapshot minus the pipeline's allowed lateness; only windows ending at or
before it are kept. Full mode stages every window; incremental mode (default, once a run has been
published) stages only windows touched by bronze rows added since the last published run's
version (Change Data Feed) or newly completed (see ``transforms.incremental``). The rows go to
``batch.<p>__staging`` (``op``: ``contracts.STAGED_OPS``); the run comes back as a ``staged`` ``BatchRun``.

Recording the run in ``ops.batch_runs``, the audit and the publish that follow, the batch lock and the
order of it all belong to ``batch.wap`` (write-audit-publish), which calls ``compute_stage``.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING

from infra.utc import as_utc
from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.run_records import BatchRun
from spark_jobs.batch.bronze import (
    batch_cutoff,
    bronze_changes,
    bronze_empty,
    bronze_snapshot,
    changes_gone,
    snapshot_stats,
)
from spark_jobs.batch.dedup import first_copies
from spark_jobs.batch.definition import require_one_definition
from spark_jobs.batch.gate import Audit, GateAlongside
from spark_jobs.batch.increment import incremental_rows
from spark_jobs.io import batch_runs
from spark_jobs.io.delta_io import commit_info, latest_version, replace_rows
from spark_jobs.io.ops_reader import table_path
from spark_jobs.shared.step_timer import Steps
from spark_jobs.transforms import incremental

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def staging_rows(p: Pipeline, upserts: DataFrame, deletes: DataFrame | None, run_id: str, version: int) -> DataFrame:
    from pyspark.sql import functions as F

    cols = contracts.batch_staging(p).columns
    meta = {"computed_at": F.current_timestamp(), "run_id": F.lit(run_id), "bronze_version": F.lit(version).cast("bigint")}
    op = F.col("op") if "op" in upserts.columns else F.lit("upsert")  # a fold's rows say which it read
    out = upserts.select(*(meta.get(c, F.col(c)).cast(t).alias(c) if c != "op" else op.alias(c) for c, t in cols))
    if deletes is not None:
        out = out.unionByName(deletes.select(*(
            F.col(c) if c in p.grain else F.lit("delete").alias(c) if c == "op"
            else meta.get(c, F.lit(None)).cast(t).alias(c) for c, t in cols)))
    return out


def compute_stage(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, full: bool,
           audit: Audit | None = None) -> tuple[BatchRun, list[BatchRun] | None, GateAlongside | None]:
    """Compute a run into ``batch.<p>__staging``; returns its ``staged`` run record (``batch.wap`` saves it),
    the pipeline's runs as read under the batch lock (None: not read, a full run needs none), and, for an
    incremental run given ``audit``, the gate run on its rows while they were written (``batch.gate``)."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    steps = Steps()
    contracts.ensure(spark, contracts.bronze(p), contracts.quarantine(p), contracts.batch(p),
                     contracts.batch_staging(p), contracts.BATCH_RUNS, contracts.RECONCILIATION)
    steps.done("tables")
    version, snapshot = bronze_snapshot(spark, cfg, p)
    stats = snapshot_stats(cfg, p, version) or snapshot.agg(
        F.count(F.lit(1)).alias("n"), F.max("event_time").alias("top"), F.max("kafka_timestamp").alias("arrived")
    ).collect()[0]
    steps.done("bronze stats")
    if not stats["n"]:
        raise bronze_empty(p)
    cutoff = batch_cutoff(stats["top"], stats["arrived"], p.lateness_seconds)
    known = None if full else batch_runs.runs(spark, p.name)
    last = None if known is None else batch_runs.latest_published(known)
    if last is not None and (gone := changes_gone(cfg, p, int(last.bronze_version), version)):
        print(f"batch: {p.name}: {gone}, so the changes since the last published run cannot be read; "
              "recomputing every window (a full run)", flush=True)
        last = None
    require_one_definition(spark, cfg, p, incremental=last is not None)
    run_id = f"{p.name}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    if last is None:
        mode, previous, way = "full", None, "full"
        firsts = first_copies(p, snapshot)
        steps.done(f"repeated ids ({firsts.n_repeated})")
        upserts, deletes, release = incremental.all_windows(p, firsts.frame, cutoff), None, firsts.release
    else:
        mode, previous = "incremental", int(last.bronze_version)
        old_cutoff = as_utc(last.cutoff)
        cutoff = max(as_utc(cutoff), old_cutoff)
        new_events = (bronze_changes(spark, p, previous, version) if version > previous
                      else snapshot.limit(0)).persist()
        published = spark.table(p.tables.batch)
        increment = incremental_rows(p, published, snapshot, new_events, old_cutoff, cutoff, steps)
        increment.cached.append(new_events)
        upserts, deletes, way, release = increment.upserts, increment.deletes, increment.way, increment.release
    staging = naming.staging_table("batch", p.name)
    # an overwrite by position, or with the schema when a definition's new aggregates made new columns (a
    # replace of the table took 0.15-0.4 s more per run at 100M bronze events)
    rows = staging_rows(p, upserts, deletes, run_id, version)
    gate = GateAlongside(audit, rows) if audit is not None and mode == "incremental" else None
    try:
        replace_rows(spark, rows, staging, contracts.batch_staging(p).column_names)
        release()  # the frames cached on the way (not the gate's, whose cache is computed)
        steps.done(f"{way} windows")
        written = latest_version(table_path(cfg, staging))  # under the batch lock: the newest commit is the write
        counts = staged_counts(spark, cfg, staging, written, has_deletes=deletes is not None)
    except BaseException:
        if gate is not None:
            gate.abandon()
        raise
    run = BatchRun(run_id=run_id, pipeline=p.name, mode=mode, status="staged", bronze_version=version,
                   previous_bronze_version=previous, cutoff=cutoff,
                   windows_written=sum(counts.get(op, 0) for op in contracts.WRITTEN_OPS),
                   windows_deleted=counts.get("delete", 0), events_read=int(stats["n"]),
                   duration_ms=int((time.monotonic() - started) * 1000), staged_at=batch_runs.now(),
                   staging_version=written)
    steps.done("counts")
    steps.report(f"batch: {p.name} stage")
    return run, known, gate


def staged_counts(spark: SparkSession, cfg: TidewaterConfig, staging: str, written: int,
                  has_deletes: bool) -> dict[str, int]:
    """Rows per ``op`` of ``staging`` as commit ``written`` (the run's write) left it: without deletes, that
    commit's ``numOutputRows``, read from its log file (``DESCRIBE HISTORY`` is a Spark job of 0.4 s),
    else a count by ``op``."""
    from pyspark.sql import functions as F

    rows = None
    if not has_deletes and written >= 0:
        rows = (commit_info(table_path(cfg, staging), written).get("operationMetrics") or {}).get("numOutputRows")
    if rows is not None:
        return {"upsert": int(rows)}
    return {r["op"]: r["n"] for r in spark.table(staging).groupBy("op").agg(F.count(F.lit(1)).alias("n")).collect()}


def refuse_in_kappa(cfg: TidewaterConfig, p: Pipeline) -> None:
    if cfg.mode == "kappa":
        raise TidewaterError(f"batch: mode is 'kappa', which has no batch layer; {p.name} is served from the speed "
                             f"table (rebuild history with 'tidewater replay {p.name}'), or set mode: lambda")


def run_line(run: BatchRun) -> str:
    """The last stdout line of ``--stage-only`` and ``--publish`` (Airflow reads it)."""
    return json.dumps({"run_id": run.run_id, "status": run.status,
                       "staging_table": naming.staging_table("batch", run.pipeline),
                       "windows": run.windows_written, "deleted": run.windows_deleted,
                       "cutoff": as_utc(run.cutoff).isoformat(sep=" "),
                       "already_published": run.already_published})
