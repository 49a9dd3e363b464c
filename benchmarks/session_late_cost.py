"""What keeping late events costs a session pipeline's ``speed`` query: ``SessionMerge`` with its
``late.<p>`` step (``speed.session_late``: each micro-batch's Kafka range read again, late events appended)
against the same sink with that step left out, on the same Kafka backlog.

An isolated stack (real Kafka, metastore, Delta). ``--events`` ``game_sessions`` events over ``--users``
users go once to the topic, 1 s apart in event time, with every ``--late-every``-th event a day behind
(so behind the watermark Spark drops late events by, once the query has one: from its third micro-batch). Each variant streams the whole backlog through
the speed query's own steps (``classify``, ``with_watermark_dedup``, ``open_sessions``) into
``SessionMerge`` of a speed version of its own, ``--per-batch`` records per micro-batch
(``availableNow``), on the job's own Spark session. Variants alternate (``--rounds``), so load from elsewhere
on the machine falls on both, after a warm-up run (round 0); the late rows each run wrote and the watermark
drops it counted are reported.

Run: ``python -m benchmarks.session_late_cost [--events 200000] [--users 2000] [--per-batch 20000]
[--late-every 100] [--rounds 2]``; writes ``results/<time>-session_late_cost.md`` (git commit included).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from typing import Any

from benchmarks.harness import save_markdown_table
from benchmarks.stack import isolated_stack, stop_stack_on_term
from infra.spark_session import get_spark
from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic
from spark_jobs.io.kafka_source import CLIENT_TIMEOUTS
from spark_jobs.speed.open_sessions import open_sessions
from spark_jobs.speed.session_sink import SessionMerge
from spark_jobs.transforms.parse import classify, valid_events, with_kafka_metadata
from spark_jobs.transforms.windows import with_watermark_dedup

VARIANTS = ("without late rows", "with late rows")


def fill_topic(spark: Any, cfg: TidewaterConfig, topic: str, events: int, users: int, late_every: int) -> int:
    """The events as JSON records (key = user); returns how many are a day behind."""
    from pyspark.sql import functions as F

    ensure_topic(cfg, topic)
    t0 = (int(time.time() * 1000) - 86_400_000) // 60_000 * 60_000
    i = F.col("id")
    late = (i % late_every) == late_every - 1
    rows = spark.range(events).select(
        F.concat(F.lit("e"), i.cast("string")).alias("event_id"), F.concat(F.lit("u"), (i % users).cast("string")).alias("user_id"),
        (F.lit(t0) + i * 1000 - F.when(late, F.lit(86_400_000)).otherwise(0)).cast("bigint").alias("timestamp"),
        F.lit("move").alias("action"), (i % 10).cast("int").alias("points"), i,
        (i % cfg.kafka.partitions).cast("int").alias("partition"))
    # each Kafka partition in event order: only the events sent behind are late
    (rows.repartition(cfg.kafka.partitions, "partition").sortWithinPartitions("id")
     .select(F.col("user_id").alias("key"), F.to_json(F.struct("event_id", "user_id", "timestamp", "action", "points")).alias("value"),
             "partition")
     .write.format("kafka").option("kafka.bootstrap.servers", cfg.kafka.bootstrap).option("topic", topic).save())
    return events // late_every


def run_variant(spark: Any, cfg: TidewaterConfig, variant: str, version: int, per_batch: int) -> dict[str, Any]:
    p = load_pipeline("game_sessions", cfg.pipelines)
    contracts.ensure(spark, contracts.speed(p, version), contracts.late(p))
    checkpoint = naming.checkpoint_dir(cfg, p.name, "speed", version)
    source = (spark.readStream.format("kafka").options(**CLIENT_TIMEOUTS).option("kafka.bootstrap.servers", cfg.kafka.bootstrap)
              .option("subscribe", p.topic).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", per_batch).load())
    sessions = valid_events(source.transform(with_kafka_metadata).transform(classify(p))).transform(
        with_watermark_dedup(p)).transform(open_sessions(p))
    merge = SessionMerge(spark, cfg, p, version, naming.speed_table(p.name, version), checkpoint)
    if variant == VARIANTS[0]:
        merge.late = lambda batch_id: 0  # type: ignore[assignment]
    started = time.monotonic()
    query = (sessions.writeStream.outputMode("update").foreachBatch(merge).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.monotonic() - started
    dropped = sum(sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in (pr.get("stateOperators") or []))
                  for pr in (json_of(x) for x in query.recentProgress))
    late = spark.sql(f"SELECT count(*) FROM {contracts.late(p).name} WHERE speed_version = {version}").collect()[0][0]
    shutil.rmtree(checkpoint, ignore_errors=True)
    return {"seconds": seconds, "batches": len(query.recentProgress), "dropped": dropped, "late_rows": late}


def json_of(progress: Any) -> dict[str, Any]:
    return dict(json.loads(progress.json))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.session_late_cost")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--per-batch", type=int, default=20_000)
    parser.add_argument("--late-every", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

    stop_stack_on_term("session_late_cost")

    lines = []
    with isolated_stack() as cfg:
        spark = get_spark(cfg, "session-late-cost")
        late_sent = fill_topic(spark, cfg, "game-events", args.events, args.users, args.late_every)
        version = 10
        for r in range(-1, args.rounds):  # round 0: a warm-up of the JVM and the Python workers
            for variant in ((VARIANTS[1],) if r < 0 else VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
                version += 1
                out = run_variant(spark, cfg, variant, version, args.per_batch)
                lines.append(f"| {r + 1} | {variant} | {out['seconds']:.1f} | {args.events / out['seconds']:,.0f} | "
                             f"{out['batches']} | {out['dropped']:,} | {out['late_rows']:,} |")
                print(lines[-1], flush=True)
    save_markdown_table("session_late_cost", "session speed query: late.<p> rows against none",
                        f"{args.events:,} events ({late_sent:,} sent a day behind), {args.users:,} users, {args.per_batch:,} "
                        "records per micro-batch, the speed job's Spark session on an isolated stack",
                        ["round", "variant", "seconds", "events/s", "micro-batches", "dropped (progress)", "late rows"], lines)


if __name__ == "__main__":
    main()
