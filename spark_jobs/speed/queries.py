"""The speed job's streaming queries, built from a pipeline definition (``spark_jobs.speed.job`` runs them).

Tumbling and sliding windows: ONE stateless ``stream`` query (``speed.stream_batch``). Session windows:
an ``ingest`` query and a stateful ``speed`` query (``speed.open_sessions``: open sessions shown as they
change, closed ones final, written by ``speed.session_sink``). A new checkpoint is a
new lineage; what it does with tables that already hold rows is decided in ``io.lineage``. A pipeline
with an ``alerts:`` section also runs the ``alerts`` query (``spark_jobs.alerts.query``) beside its
ingest role: in the main job, never in a replay.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from lakehouse.window_kinds import kind_of
from spark_jobs.alerts.query import start_alerts
from spark_jobs.io import lineage
from spark_jobs.io.kafka_source import read_stream
from spark_jobs.io.sink import MicroBatchSink
from spark_jobs.shared import definition_guard
from spark_jobs.speed import lineages as speed_lineages
from spark_jobs.speed.cached_records import WATERMARK_COLUMN
from spark_jobs.speed.open_sessions import open_sessions, require_open_session_state
from spark_jobs.speed.session_sink import SessionMerge
from spark_jobs.speed.sinks import ingest_writer
from spark_jobs.speed.stream_batch import StreamBatch
from spark_jobs.speed.stream_warm_up import warm_up
from spark_jobs.transforms.parse import classify, valid_events, with_kafka_metadata
from spark_jobs.transforms.windows import with_watermark_dedup

INGEST_VERSION = naming.INGEST_VERSION


def start_queries(spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str],
                  starting_offsets: str | None = None) -> dict[str, Any]:
    contracts.ensure(spark, contracts.bronze(p), contracts.quarantine(p), contracts.speed(p, version),
                     contracts.late(p), contracts.STREAM_PROGRESS)
    definition_guard.require_speed_same(cfg, p, version)
    trigger = {"processingTime": f"{cfg.spark.trigger_seconds} seconds"}
    alerts = alerts_query(spark, cfg, p, which, trigger)  # started after the others (its dict's last entry)
    which = [q for q in which if q != ALERTS]
    if stateless(p) and which:
        return {STREAM: start_stream(spark, cfg, p, version, which, starting_offsets, trigger), **alerts()}
    queries: dict[str, Any] = {}
    if "ingest" in which:
        checkpoint = naming.checkpoint_dir(cfg, p.name, "ingest", INGEST_VERSION)
        floors, start = lineage.stream_floors(spark, cfg, p, INGEST_VERSION, checkpoint, ["ingest"])
        if start:
            print(f"speed: new ingest lineage at {checkpoint}: resuming after the offsets bronze/quarantine hold: "
                  f"{start}", file=sys.stderr, flush=True)
        classified = (read_stream(spark, cfg, p.topic, start or starting_offsets).transform(with_kafka_metadata)
                      .transform(classify(p)))
        ingest: MicroBatchSink = ingest_writer(p, checkpoint, floors, cfg.mode)
        queries["ingest"] = (
            classified.writeStream.queryName(f"{p.name}_ingest_v{INGEST_VERSION}")
            .foreachBatch(ingest)
            .option("checkpointLocation", str(checkpoint))
            .trigger(**trigger).start()
        )
    if "speed" in which:
        checkpoint = naming.checkpoint_dir(cfg, p.name, "speed", version)
        table = naming.speed_table(p.name, version)
        require_open_session_state(p, checkpoint)
        new_speed_lineage(spark, contracts.storage_table(p, version), checkpoint, starting_offsets or cfg.kafka.starting_offsets)
        events = read_stream(spark, cfg, p.topic, starting_offsets).transform(with_kafka_metadata).transform(classify(p))
        sessions = valid_events(events).transform(with_watermark_dedup(p)).transform(open_sessions(p))
        merge: MicroBatchSink = SessionMerge(spark, cfg, p, version, table, checkpoint)
        queries["speed"] = (
            sessions.writeStream.queryName(f"{p.name}_speed_v{version}")
            .outputMode(kind_of(p.window).output_mode).foreachBatch(merge)
            .option("checkpointLocation", str(checkpoint))
            .trigger(**trigger).start()
        )
    return {**queries, **alerts()}


STREAM = "stream"
ALERTS = "alerts"


def alerts_query(spark: Any, cfg: TidewaterConfig, p: Pipeline, which: list[str],
                 trigger: dict[str, str]) -> Callable[[], dict[str, Any]]:
    """What starts {"alerts": query} when ``p`` declares alerts and ``which`` asks for them (``alerts``, or
    the ``ingest`` role of the main job while its alerts query does not run yet); else {}."""
    running = any(q.name == f"{p.name}_{ALERTS}" for q in spark.streams.active)
    wanted = runs_alerts(p, which) and (ALERTS in which or not running)
    return lambda: {ALERTS: start_alerts(spark, cfg, p, trigger)} if wanted else {}


def runs_alerts(p: Pipeline, which: list[str]) -> bool:
    """Whether a job running the queries ``which`` runs ``p``'s alerts query: the main job (its ``ingest``
    role) or an explicit ``alerts``, never a replay."""
    return bool(p.alerts) and (ALERTS in which or "ingest" in which)


def stateless(p: Pipeline) -> bool:
    """Tumbling and sliding windows run as ONE stateless query (``speed.stream_batch``): Kafka read and
    parsed once, per-window partials merged into the speed table. Session windows merge across
    micro-batches, so they keep their open sessions in Spark state (ingest and speed queries)."""
    return not kind_of(p.window).keeps_state


def start_stream(spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str],
                 starting_offsets: str | None, trigger: dict[str, str]) -> Any:
    from pyspark.sql import functions as F

    roles: list[str] = [r for r in ("ingest", "speed") if r in which]
    checkpoint, previous = speed_lineages.choose(cfg, p, STREAM if "ingest" in roles else "speed", version)
    taken_over = speed_lineages.frontier(spark, p, version, previous) if previous is not None else None
    floors, start = lineage.stream_floors(spark, cfg, p, version, checkpoint, roles, taken_over)
    speed_lineages.start_writing(cfg, p, version, checkpoint)
    if previous is not None:
        print(f"speed: new lineage {checkpoint.name} of v{version} takes over from {previous.name} at {taken_over}",
              file=sys.stderr, flush=True)
    unstamped = F.lit(None).cast("timestamp")  # the sink stamps each micro-batch's time (cached_form)
    records = (with_kafka_metadata(read_stream(spark, cfg, p.topic, start or starting_offsets), unstamped)
               .transform(classify(p))
               .withColumn(WATERMARK_COLUMN, F.when(F.col("reason_code").isNull(), F.col("event_time")))
               .withWatermark(WATERMARK_COLUMN, p.watermark))
    sink: MicroBatchSink = StreamBatch(spark, p, version, checkpoint, roles, floors, mode=cfg.mode,
                       interpreted_max_records=cfg.spark.interpreted_max_records)
    warm_up(sink, records.schema, cfg)
    return (records.writeStream.queryName(f"{p.name}_{STREAM}_v{version}").foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())


def new_speed_lineage(spark: Any, table: str, checkpoint: Any, starting_offsets: str) -> None:
    if lineage.is_new(checkpoint) and lineage.prepare_speed_table(spark, table, starting_offsets):
        print(f"speed: new speed lineage at {checkpoint}: emptied {table}, recomputing it from the "
              "earliest offsets", file=sys.stderr, flush=True)
