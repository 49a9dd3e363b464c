"""The stream's warm-up: before its query starts, a speed job runs its micro-batch's work on data that
changes nothing, so that the first micro-batches of a new JVM and Python process do not pay their
cold start (planning, code generation, the dedup history's load from bronze, Delta's write path) in
the latency of every event they carry.

* ``spark.warm_up_plan_rounds`` rounds on no rows: the counts, the speed step's plan and the partials append's write
  path (the append goes to a scratch Delta table beside the checkpoint that nothing reads). The
  driver's planning code (Spark's analyzer, optimizer and planner, Delta's commit) runs slowly at
  first and is warmed by plans, not rows. The first round also loads the dedup history.
* ``spark.warm_up_record_rounds`` rounds on the topic's last ``RECORDS_PER_PARTITION`` records per partition, read
  as a batch (already processed or not, they are only read): Kafka's consumer, the parse, the
  interpreted evaluation a level micro-batch runs, and the per-window partials, into the same scratch
  table. The history lookup reads the dedup history and never adds to it.

Measured at medium size, 1,000 events/s right after a start (p50 / p99; docs/performance.md):
one round on no rows 4.34 / 12.12 s; four on no rows 2.94 / 7.11 and 2.88 / 6.81 s; four plus
three on records 3.04 / 5.63 s, two plus two 3.17 / 6.75 s (the last two after scenario 1, whose topic
and history are bigger). Each round costs 1.5-3 s of the job's start; the defaults are four plus three.
The tests run one of each (tests/conftest.py): they measure no latency and start many jobs.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from infra.utc import as_utc
from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from spark_jobs.io.delta_io import table_log_dir
from spark_jobs.io.kafka_admin import offsets
from spark_jobs.io.kafka_source import read_range
from spark_jobs.io.lineage import committed_batches, offset_log_entry
from spark_jobs.speed import execution_mode
from spark_jobs.speed.cached_records import WATERMARK_COLUMN, cached_form
from spark_jobs.speed.partials_table import write_scratch
from spark_jobs.transforms.parse import classify, with_kafka_metadata

RECORDS_PER_PARTITION = 500


def warm_up(sink: Any, schema: Any, cfg: TidewaterConfig) -> None:
    """``sink``: the query's ``StreamBatch``; ``schema``: the schema of the records it is given."""
    if "speed" not in sink.roles:
        return
    spark, checkpoint = sink.spark, sink.checkpoint
    empty = spark.createDataFrame(spark.sparkContext.emptyRDD(), schema).drop(WATERMARK_COLUMN)
    done = committed_batches(checkpoint)  # a restart: the history reaches back from its watermark
    wm_ms = int(offset_log_entry(checkpoint, done[-1])[0].get("batchWatermarkMs") or 0) if done else 0
    wm = datetime.fromtimestamp(wm_ms / 1000, UTC) if wm_ms > 0 else datetime.now(UTC)
    scratch = checkpoint.with_name(f"{checkpoint.name}.warm-up")
    seconds = []
    for _ in range(cfg.spark.warm_up_plan_rounds):
        started = time.monotonic()
        sink.stats(empty, wm)
        spark.table(naming.speed_partials_table(sink.p.name, sink.version)).limit(1).collect()
        write_scratch(sink.speed_role.partials(sink.speed_role.keyed_events(empty), wm, wm, wm), sink.p, sink.version, scratch,
                      wm)
        seconds.append(time.monotonic() - started)
    resolve_append_locations(sink)
    try:
        seconds += record_rounds(sink, cfg, wm, scratch) if cfg.spark.warm_up_record_rounds else []
    except Exception as exc:  # the stream reads Kafka itself and fails loudly if it must; a warm-up need not
        print(f"stream: warm-up on the topic's records skipped ({str(exc).strip().splitlines()[0][:200]})", flush=True)
    print(f"stream: warm-up rounds {', '.join(f'{s:.1f}' for s in seconds)} s", flush=True)


def resolve_append_locations(sink: Any) -> None:
    """The tables the micro-batches append to, located now rather than in the first micro-batch
    (``delta_io.tagged_append`` writes by location, looked up once per process)."""
    tables = [contracts.speed_partials(sink.p, sink.version).name, contracts.STREAM_PROGRESS.name]
    if "ingest" in sink.roles:
        tables += [sink.p.tables.bronze, sink.p.tables.quarantine]
    for table in tables:
        table_log_dir(sink.spark, table)


def record_rounds(sink: Any, cfg: TidewaterConfig, wm: datetime, scratch: Any) -> list[float]:
    """``spark.warm_up_record_rounds`` rounds of a level micro-batch's work on the topic's latest records."""
    records, count = latest_records(sink.spark, cfg, sink.p)
    if records is None:
        return []
    seconds = []
    execution_mode.use_for(sink.spark, count, sink.interpreted_max_records)
    df = cached_form(records, datetime.now(UTC)).persist()
    try:
        for _ in range(cfg.spark.warm_up_record_rounds):
            started = time.monotonic()
            stats = sink.stats(df, wm)
            lo = as_utc(stats["lo"]) if stats["lo"] is not None else wm
            hi = as_utc(stats["hi"]) if stats["hi"] is not None else lo
            write_scratch(sink.speed_role.partials(sink.speed_role.keyed_events(df), wm, lo, hi), sink.p, sink.version,
                          scratch, wm)
            seconds.append(time.monotonic() - started)
    finally:
        df.unpersist()
    return seconds


def latest_records(spark: Any, cfg: TidewaterConfig, p: Any) -> tuple[Any, int]:
    """The topic's last ``RECORDS_PER_PARTITION`` records per partition, parsed and classified as the
    stream's micro-batches are (None when the topic is empty), and how many."""
    ranges = {part: (max(first, end - RECORDS_PER_PARTITION), end) for part, (first, end) in offsets(cfg, p.topic).items()}
    count = sum(end - start for start, end in ranges.values())
    if not count:
        return None, 0
    return read_range(spark, cfg, p.topic, ranges).transform(with_kafka_metadata).transform(classify(p)), count
