"""foreachBatch sink of the ``stream`` query: Kafka is read and parsed ONCE per micro-batch for
bronze, quarantine, the speed table and the query's own ``ops.stream_progress`` rows.

Roles (``ingest``, ``speed``): the main job has both, a Kappa replay only ``speed``. Per micro-batch,
one job over the cached records answers every count; then two threads write side by side:

1. ingest (a thread of its own): unusable records -> ``quarantine.<p>``, then valid events -> ``bronze.<p>``;
2. speed (the calling thread, so that fresh windows are visible as early as possible): on-time first
   copies, as per-window partials, appended to the partials table (``speed.role``); events behind
   the watermark are counted and left out (bronze keeps them; ``late.<p>`` gets them: ``speed.late_rows``);
3. after both: one ``ops.stream_progress`` row per role (``rows_dropped_by_watermark`` = the late events),
   committed while the next micro-batch runs (``speed.stream_progress_rows``); after each block of
   ``speed_fold.COMPACT_EVERY`` micro-batches, the block's partials are compacted beside the next
   block (``SpeedRole.compact``); every 100 micro-batches, the tables' expired Delta log files are
   deleted beside the next ones (``speed.log_cleanup``), so that no commit lists a folder that only grows.

A micro-batch of at most ``spark.interpreted_max_records`` Kafka records (a level stream)
runs interpreted: its per-batch literals would otherwise make Spark generate and compile new classes
each time (``speed.execution_mode``).

Every Delta write is a plain append tagged with the lineage (the checkpoint's query id) and the
micro-batch id; the query's first micro-batch, the only one Spark may be re-running after a crash,
first asks which of its writes committed already and skips those (``io.rerun``), so nothing is written twice. The watermark is Spark's own (the query has
``withWatermark`` on valid events' time): read from the offset log entry of the micro-batch, it is the
same when a micro-batch is re-run. ``floors`` (per role, partition -> first offset) let a new
lineage skip what a role's table already holds (``spark_jobs.io.lineage``).
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse import contracts, naming
from lakehouse.pipeline import Pipeline
from spark_jobs.io import lineage
from spark_jobs.io.delta_io import tagged_append
from spark_jobs.io.lineage import from_floor, uncommitted_batch
from spark_jobs.io.progress_recorder import recovered_row
from spark_jobs.io.rerun import committed_writes
from spark_jobs.shared.background import Background
from spark_jobs.shared.step_timer import Steps
from spark_jobs.speed import execution_mode, late_rows
from spark_jobs.speed.cached_records import CACHE_CONF, cached_form, counts
from spark_jobs.speed.log_cleanup import LogCleanup, stream_tables
from spark_jobs.speed.micro_batch_values import compilations
from spark_jobs.speed.role import SpeedRole
from spark_jobs.speed.stream_progress_rows import ProgressRows
from spark_jobs.transforms.parse import quarantined, valid_events


class StreamBatch:
    def __init__(self, spark: Any, p: Pipeline, version: int, checkpoint: Path, roles: list[str],
                 floors: dict[str, dict[str, int] | None], mode: str, interpreted_max_records: int) -> None:
        self.spark, self.p, self.version, self.checkpoint = spark, p, version, checkpoint

        # before the query starts (it runs on a copy of the session's conf): see CACHE_CONF
        for key, value in CACHE_CONF.items():
            spark.conf.set(key, value)
        self.roles, self.floors = roles, floors
        self.interpreted_max_records = interpreted_max_records  # spark.interpreted_max_records
        self.qid = ""  # the checkpoint's query id: this lineage (read once the query runs)
        self.done: set[str] | None = None  # None until the query's first micro-batch ran

        self.rerun_of = uncommitted_batch(checkpoint)  # read before the query starts
        self.speed_role = SpeedRole(spark, p, version)
        self.compiled = 0  # Spark's generated-code compilations at the previous micro-batch's end
        self.progress = ProgressRows(spark, checkpoint)
        tables = stream_tables(p.name, roles, contracts.speed_partials(p, version).name)
        self.log_cleanup = LogCleanup(spark, p.name, tables + [contracts.late(p).name] * ("speed" in roles), mode)
        recovered = self.progress.recover()  # before the query runs: rows a crash left pending
        if recovered:
            print(f"stream: wrote the pending ops.stream_progress rows of {recovered} micro-batch(es)", flush=True)

    def compiled_since(self) -> int:
        """Classes Spark compiled from generated code since the previous micro-batch's line (0 once the
        micro-batch's plans are cached: ``speed.micro_batch_values``)."""
        now = compilations(self.spark)
        since, self.compiled = now - self.compiled, now
        return since

    def tag(self, batch_id: int) -> str:
        return f"{self.qid}/{batch_id}"

    def __call__(self, df: Any, batch_id: int) -> None:
        started = time.monotonic()
        self.steps = Steps()
        meta, end = lineage.offset_log_entry(self.checkpoint, batch_id)
        records = execution_mode.planned_records(self.checkpoint, batch_id, end)
        interpreted = execution_mode.use_for(df.sparkSession, records, self.interpreted_max_records)
        self.steps.done("interpreted" if interpreted else "generated code")
        wm_ms = int(meta.get("batchWatermarkMs") or 0)
        wm = datetime.fromtimestamp(wm_ms / 1000, UTC) if wm_ms > 0 else None
        df = cached_form(df, datetime.fromtimestamp(int(meta["batchTimestampMs"]) / 1000, UTC)).persist()
        try:
            stats = self.stats(df, wm)  # one job: fills the cache and answers every count below
            self.steps.done("parse")
            if self.done is None:  # the query's first micro-batch: a re-run if it was planned before

                self.qid = lineage.query_id(self.checkpoint)
                self.done = set()
                if batch_id == self.rerun_of:
                    self.done = committed_writes(self.spark, self.p, self.version, self.qid, batch_id, stats)
                    self.steps.done(f"re-run check ({', '.join(sorted(self.done)) or 'nothing'} written)")
            rows: dict[str, tuple[int, int, int | None]] = {}
            ingest = None
            if "ingest" in self.roles:
                rows["ingest"] = (naming.INGEST_VERSION, int(stats["n_ingest"]), None)
                ingest = Background(self.ingest, from_floor(df, self.floors.get("ingest")), batch_id,
                                    int(stats["bad"]))
            try:
                if "speed" in self.roles:
                    late = int(stats["late"] or 0)
                    self.keep_late(from_floor(df, self.floors.get("speed")), wm, late, batch_id)
                    self.speed_role.append(from_floor(df, self.floors.get("speed")), wm, stats["lo"], stats["hi"],
                                           lineage=self.qid, batch_id=batch_id,
                                           write="partials" not in (self.done or set()), steps=self.steps)
                    rows["speed"] = (self.version, int(stats["n_speed"]), late)
            finally:
                if ingest is not None:
                    self.steps.seconds["bronze+quarantine"] = ingest.join()
            self.record(batch_id, meta, end, wm, rows, started)  # committed beside the next micro-batch
            if "speed" in self.roles:
                self.speed_role.compact(batch_id, self.steps)
            self.log_cleanup.maybe_start(batch_id)  # expired log files, beside the next micro-batches
            self.done = set()  # every later micro-batch of this query is new
            print(f"stream: batch {batch_id}: {self.steps.line()}, {self.compiled_since()} classes compiled", flush=True)
        finally:
            df.unpersist()

    def keep_late(self, records: Any, wm: datetime | None, late: int, batch_id: int) -> None:
        """The micro-batch's late events -> ``late.<p>`` (``speed.late_rows``), BEFORE its partials: a
        new lineage takes over after a micro-batch whose partials landed, so its late rows are there
        too. A lineage's first micro-batch first deletes the version's rows that it reads again."""
        if batch_id == 0:
            late_rows.forget_from(self.spark, self.p, self.version, self.floors.get("speed"))
            self.steps.done("late rows of an earlier lineage forgotten")
        if late and wm is not None and "late" not in (self.done or set()):
            late_rows.append(records, self.p, self.speed_role.late(wm), wm, batch_id=batch_id, version=self.version,
                             lineage=self.qid)
            self.steps.done("late")

    def stats(self, df: Any, wm: datetime | None) -> Any:
        """Per role (its floor applied): records, unusable records, late events, and the event-time
        range of valid events (``cached_records.counts``)."""
        return counts(df, self.floors, self.speed_role.late(wm))

    def ingest(self, records: Any, batch_id: int, bad: int) -> None:
        """Unusable records -> quarantine, THEN valid events -> bronze (run beside the speed role).
        The order is what a new lineage's floors rely on (``lineage.ingest_floors``)."""
        from pyspark.sql import functions as F

        done = self.done or set()
        if bad and "quarantine" not in done:  # an empty append would still cost a commit
            tagged_append(quarantined(from_floor(records, self.floors.get("quarantine"))),
                          self.p.tables.quarantine, self.tag(batch_id))
        if "bronze" not in done:
            tagged_append(valid_events(records).withColumn("event_date", F.to_date("event_time")),
                          self.p.tables.bronze, self.tag(batch_id))

    def record(self, batch_id: int, meta: dict[str, Any], end: dict[str, Any], wm: datetime | None,
               rows: dict[str, tuple[int, int, int | None]], started: float) -> None:
        """This micro-batch's ``ops.stream_progress`` rows, exactly once like the data
        (``speed.stream_progress_rows``: appended while the next micro-batch runs)."""
        if not rows or "ops" in (self.done or set()):
            return
        seconds = time.monotonic() - started
        out = []
        for query, (version, n, late) in rows.items():
            row = recovered_row(self.p.name, query, version, batch_id, meta, end, None)
            out.append(dataclasses.replace(
                row, run_id=self.qid, input_rows=n, batch_duration_ms=int(seconds * 1000),
                processed_rows_per_second=n / seconds if seconds > 0 else 0.0, input_rows_per_second=None,
                watermark=wm, state_rows=0, rows_dropped_by_watermark=late))
        self.progress.submit(self.tag(batch_id), batch_id, out)
