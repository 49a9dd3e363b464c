"""The stream's warm-up: before its query starts, a speed job runs the micro-batch's counts, the
speed step's plan and the partials append's write path ``WARM_UP_ROUNDS`` times, on no rows (the append goes to a
scratch Delta table beside the checkpoint that nothing reads). Without it the first micro-batch
with data pays their cold start in a new JVM and Python process (planning, code generation, the
dedup history's load from bronze, Delta's write path: 2-5 s measured on 2 cores), and that delay
sits in the latency of every event it carries.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from lakehouse import naming

# The driver's planning code (Spark's analyzer, optimizer and planner, Delta's write path) is what a
# new JVM runs slowly at first, and it is warmed by plans, not rows: rounds 1-4 took 2.2, 1.6, 0.8 and
# 0.8 s. One round (stop 34) left the first ten micro-batches of a level stream at up to twice their
# later time; four cut the 1,000 events/s latency right after a start from p50 4.34 s, p99 12.12 s
# to p50 2.94 s, p99 7.11 s (medium runs, stop 35, benchmarks/README.md)
WARM_UP_ROUNDS = 4


def warm_up(sink: Any, schema: Any) -> None:
    """``sink``: the query's ``StreamBatch``; ``schema``: the schema of the records it is given."""
    from spark_jobs.io.lineage import committed_batches, offset_log_entry
    from spark_jobs.io.partials_table import write_scratch
    from spark_jobs.io.stream_batch import WATERMARK_COLUMN

    if "speed" not in sink.roles:
        return
    spark, checkpoint = sink.spark, sink.checkpoint
    empty = spark.createDataFrame(spark.sparkContext.emptyRDD(), schema).drop(WATERMARK_COLUMN)
    done = committed_batches(checkpoint)  # a restart: the history reaches back from its watermark
    wm_ms = int(offset_log_entry(checkpoint, done[-1])[0].get("batchWatermarkMs") or 0) if done else 0
    wm = datetime.fromtimestamp(wm_ms / 1000, UTC) if wm_ms > 0 else datetime.now(UTC)
    scratch = checkpoint.with_name(f"{checkpoint.name}.warm-up")
    seconds = []
    for _ in range(WARM_UP_ROUNDS):
        started = time.monotonic()
        sink.stats(empty, wm)
        spark.table(naming.speed_partials_table(sink.p.name, sink.version)).limit(1).collect()
        write_scratch(sink.speed_partials(empty, wm, wm), sink.p, sink.version, scratch, wm)
        seconds.append(time.monotonic() - started)
    print(f"stream: warm-up rounds {', '.join(f'{s:.1f}' for s in seconds)} s", flush=True)
