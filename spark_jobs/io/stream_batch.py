"""foreachBatch sink of the ``stream`` query: Kafka is read and parsed ONCE per micro-batch for
bronze, quarantine, the speed table and the query's own ``ops.stream_progress`` rows.

Roles (``ingest``, ``speed``): the main job has both, a Kappa replay only ``speed``. Per micro-batch,
one job over the cached records answers every count; then two threads write side by side:

1. ingest (a thread of its own): valid events -> ``bronze.<p>``, unusable records -> ``quarantine.<p>``;
2. speed (the calling thread, so that fresh windows are visible as early as possible): events behind
   the watermark are counted and left out (bronze keeps them); the first copy of every event id
   (``partials.first_copies`` against bronze within the dedup horizon, with or without this
   micro-batch's own append) is aggregated into per-window partials, which ONE MERGE folds into the
   speed table. The MERGE condition bounds ``window_start`` by the micro-batch's own events, so Delta
   reads only the files of those windows; windows whose end the watermark has passed get ``is_final``;
3. after both: one ``ops.stream_progress`` row per role (``rows_dropped_by_watermark`` = the late events).

Every Delta write is idempotent with ``txnAppId`` = sink + the checkpoint's query id and
``txnVersion`` = micro-batch id (for the MERGE through Delta's session confs), so a micro-batch
that Spark re-runs after a crash changes nothing twice. The watermark is Spark's own (the query has
``withWatermark`` on valid events' time): read from the offset log entry of the micro-batch, it is the
same when a micro-batch is re-run. ``floors`` (per role, partition -> first offset) let a new
lineage skip what a role's table already holds (``spark_jobs.io.lineage``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lakehouse import contracts, naming
from lakehouse.pipeline import Pipeline, duration_seconds
from lakehouse.utc import as_utc, sql_timestamp
from spark_jobs.io.background import Background

WATERMARK_COLUMN = "_watermark_time"  # event time of valid events only: what Spark's watermark tracks
TXN_APP_CONF, TXN_VERSION_CONF = "spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion"


class StreamBatch:
    def __init__(self, spark: Any, p: Pipeline, version: int, checkpoint: Path, roles: list[str],
                 floors: dict[str, dict[str, int] | None]) -> None:
        self.spark, self.p, self.version, self.checkpoint = spark, p, version, checkpoint
        self.roles, self.floors = roles, floors
        self.table = naming.speed_table(p.name, version)
        self.apps: dict[str, str] = {}
        self.finalized_wm: datetime | None = None
        self.window_seconds = duration_seconds(p.window.slide or p.window.size or "1 second")

    def app(self, sink: str) -> str:
        from spark_jobs.io import lineage

        if not self.apps:
            self.apps["qid"] = lineage.query_id(self.checkpoint)
        return naming.txn_app_id(self.p.name, sink, self.apps["qid"])

    def __call__(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from spark_jobs.io import lineage
        from spark_jobs.io.lineage import from_floor

        started = self.mark = time.monotonic()
        self.steps: dict[str, float] = {}
        meta, end = lineage.offset_log_entry(self.checkpoint, batch_id)
        wm_ms = int(meta.get("batchWatermarkMs") or 0)
        wm = datetime.fromtimestamp(wm_ms / 1000, UTC) if wm_ms > 0 else None
        # the raw text is kept only where quarantine needs it: a smaller cache for every later step
        df = df.drop(WATERMARK_COLUMN).withColumn(
            "raw_value", F.when(F.col("reason_code").isNotNull(), F.col("raw_value"))).persist()
        try:
            stats = self.stats(df, wm)  # one job: fills the cache and answers every count below
            self.step("parse")
            rows: dict[str, tuple[int, int, int | None]] = {}
            ingest = None
            if "ingest" in self.roles:
                rows["ingest"] = (naming.INGEST_VERSION, int(stats["n_ingest"]), None)
                ingest = Background(self.ingest, from_floor(df, self.floors.get("ingest")), batch_id,
                                    int(stats["bad"]))
            try:
                if "speed" in self.roles:
                    late = int(stats["late"] or 0)
                    self.speed(from_floor(df, self.floors.get("speed")), batch_id, wm, stats["lo"], stats["hi"])
                    rows["speed"] = (self.version, int(stats["n_speed"]), late)
            finally:
                if ingest is not None:
                    self.steps["bronze+quarantine"] = ingest.join()
            self.record(batch_id, meta, end, wm, rows, started)
            self.step("ops")
            print(f"stream: batch {batch_id}: " + ", ".join(f"{k} {v:.1f}s" for k, v in self.steps.items()), flush=True)
        finally:
            df.unpersist()

    def stats(self, df: Any, wm: datetime | None) -> Any:
        """Per role (its floor applied): records, unusable records, late events, and the event-time
        range of valid events (``lo``: on-time only)."""
        from pyspark.sql import functions as F

        from spark_jobs.io.lineage import floor_sql

        ingest, speed = (F.expr(floor_sql(self.floors.get(role))) for role in ("ingest", "speed"))
        valid = F.col("reason_code").isNull()
        late_if = F.col("event_time") < F.lit(wm) if wm is not None else F.lit(False)
        return df.agg(F.count_if(ingest).alias("n_ingest"), F.count_if(ingest & ~valid).alias("bad"),
                      F.count_if(speed).alias("n_speed"), F.count_if(speed & valid & late_if).alias("late"),
                      F.min(F.when(speed & valid & ~late_if, F.col("event_time"))).alias("lo"),
                      F.max(F.when(speed & valid, F.col("event_time"))).alias("hi")).collect()[0]

    def ingest(self, records: Any, batch_id: int, bad: int) -> None:
        """Valid events -> bronze, unusable records -> quarantine (run beside the speed MERGE)."""
        from pyspark.sql import functions as F

        from spark_jobs.io.delta_io import idempotent_append
        from spark_jobs.transforms.parse import quarantined, valid_events

        idempotent_append(valid_events(records).withColumn("event_date", F.to_date("event_time")),
                          naming.table("bronze", self.p.name), self.app("bronze"), batch_id)
        if bad:  # an empty append would still cost a commit
            idempotent_append(quarantined(records), naming.table("quarantine", self.p.name),
                              self.app("quarantine"), batch_id)

    def step(self, name: str) -> None:
        now = time.monotonic()
        self.steps[name] = now - self.mark
        self.mark = now

    def speed(self, records: Any, batch_id: int, wm: datetime | None, lo_seen: Any, hi_seen: Any) -> None:
        """Fold the micro-batch's on-time first copies into the speed table."""
        from pyspark.sql import functions as F

        from spark_jobs.transforms.parse import valid_events
        from spark_jobs.transforms.partials import first_copies, partial_aggregate

        lo: datetime | None = as_utc(lo_seen) if lo_seen is not None else None
        hi: datetime | None = as_utc(hi_seen) if hi_seen is not None else None
        if lo is None:
            if hi is not None:
                self.finalize(max(x for x in (wm, hi - timedelta(seconds=self.p.watermark_seconds)) if x is not None))
            return
        late_if = F.col("event_time") < F.lit(wm) if wm is not None else F.lit(False)
        delay = timedelta(seconds=self.p.watermark_seconds)
        on_time = valid_events(records).where(~late_if)
        bronze = (self.spark.table(naming.table("bronze", self.p.name))
                  .where((F.col("event_time") >= F.lit(lo - delay)) & (F.col("event_date") >= F.lit((lo - delay).date()))))
        # bronze may or may not hold this micro-batch yet (its append runs beside): first_copies
        # gives the same answer either way, because the candidates are part of the history too
        history = bronze.select(self.p.event_id, "kafka_timestamp", "kafka_partition", "kafka_offset").unionByName(
            on_time.select(self.p.event_id, "kafka_timestamp", "kafka_partition", "kafka_offset"))
        partials = first_copies(self.p, on_time, history).transform(partial_aggregate(self.p))
        wm_after = max(x for x in (wm, (hi or lo) - delay) if x is not None)
        self.merge(partials, batch_id, lo, wm_after)  # Delta materializes the source once
        self.step("merge")
        self.finalize(wm_after)
        self.step("finalize")

    def merge(self, partials: Any, batch_id: int, lo: datetime, wm_after: datetime) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        from spark_jobs.transforms.partials import combined

        final = f"s.window_end <= {sql_timestamp(wm_after)}"
        source = partials.withColumn("batch_id", F.lit(batch_id).cast("bigint"))
        cols = contracts.speed(self.p, self.version).column_names
        insert: dict[str, Any] = {f"`{c}`": f"s.`{c}`" for c in cols if c not in ("updated_at", "is_final")}
        insert.update({"`updated_at`": "current_timestamp()", "`is_final`": final})
        update: dict[str, Any] = {**combined(self.p), "`updated_at`": "current_timestamp()", "`batch_id`": "s.batch_id",
                  "`is_final`": final}
        oldest = lo - timedelta(seconds=self.p.window.size_seconds)  # no window of the batch starts earlier
        cond = " AND ".join([f"t.window_start >= {sql_timestamp(oldest)}", *(f"t.`{k}` <=> s.`{k}`" for k in self.p.grain)])
        self.spark.conf.set(TXN_APP_CONF, self.app("speed"))
        self.spark.conf.set(TXN_VERSION_CONF, str(batch_id))
        try:
            (DeltaTable.forName(self.spark, self.table).alias("t").merge(source.alias("s"), cond)
             .whenMatchedUpdate(set=update).whenNotMatchedInsert(values=insert).execute())
        finally:
            for conf in (TXN_APP_CONF, TXN_VERSION_CONF):
                self.spark.conf.unset(conf)

    def finalize(self, wm: datetime) -> None:
        """Mark windows the watermark has passed, once per window boundary it crosses (idempotent)."""
        step = self.window_seconds
        if self.finalized_wm is not None and int(wm.timestamp()) // step <= int(self.finalized_wm.timestamp()) // step:
            return
        band = (f" AND window_end > {sql_timestamp(self.finalized_wm - timedelta(seconds=2 * step))}"
                if self.finalized_wm is not None else "")
        self.spark.sql(f"UPDATE {self.table} SET is_final = true WHERE NOT is_final AND window_end <= "
                       f"{sql_timestamp(wm)}{band}")
        self.finalized_wm = wm

    def record(self, batch_id: int, meta: dict[str, Any], end: dict[str, Any], wm: datetime | None,
               rows: dict[str, tuple[int, int, int | None]], started: float) -> None:
        """This micro-batch's ``ops.stream_progress`` rows, written exactly once with the data."""
        from spark_jobs.io.delta_io import idempotent_append
        from spark_jobs.io.progress_recorder import recovered_row

        if not rows:
            return
        seconds = time.monotonic() - started
        out = []
        for query, (version, n, late) in rows.items():
            row = recovered_row(self.p.name, query, version, batch_id, meta, end, None)
            row.update(run_id=self.apps.get("qid", ""), input_rows=n, batch_duration_ms=int(seconds * 1000),
                       processed_rows_per_second=n / seconds if seconds > 0 else 0.0, input_rows_per_second=None,
                       watermark=wm, state_rows=0, rows_dropped_by_watermark=late)
            out.append([row[c] for c in contracts.STREAM_PROGRESS.column_names])
        schema = ", ".join(f"`{c}` {t}" for c, t in contracts.STREAM_PROGRESS.columns)
        idempotent_append(self.spark.createDataFrame(out, schema), contracts.STREAM_PROGRESS.name,
                          self.app("progress"), batch_id)
