"""The stream's warm-up: before its query starts, a speed job runs the micro-batch's counts, the
speed step's plan and the partials append's write path once, on no rows (the append goes to a
scratch Delta table beside the checkpoint that nothing reads). Without it the first micro-batch
with data pays their cold start in a new JVM and Python process (planning, code generation, the
dedup history's load from bronze, Delta's write path: 2-5 s measured on 2 cores), and that delay
sits in the latency of every event it carries.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lakehouse import naming


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
    sink.stats(empty, wm)
    spark.table(naming.speed_partials_table(sink.p.name, sink.version)).limit(1).collect()
    scratch = checkpoint.with_name(f"{checkpoint.name}.warm-up")
    write_scratch(sink.speed_partials(empty, wm, wm), sink.p, sink.version, scratch, wm)
