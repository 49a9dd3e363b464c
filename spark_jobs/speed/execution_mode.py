"""How a micro-batch's queries execute: Spark's generated code for big micro-batches, its
interpreted evaluation for small ones.

Spark compiles Java code for each query stage (whole-stage codegen, janino) and inlines literals of
timestamp, long and int type into that code. A speed micro-batch's queries carry such per-batch
values (its watermark, its micro-batch id, the dedup horizon, ``current_timestamp()``), so every
micro-batch generated and compiled new classes: measured at 1,000 events/s on 2 cores, about 85
generated classes loaded per micro-batch (``jstat -class``: ~50 classes/s loaded, ~37/s unloaded)
and the JVM's JIT compiler threads busy at 0.6 of a core, compiling and deoptimizing code that one
micro-batch uses. For a few thousand records that work costs far more than it saves; interpreted
evaluation needs no compilation, and the JVM's classes stop changing, so its JIT settles.

The speed job's own per-batch values are kept out of the generated code (``speed.micro_batch_values``), so big
micro-batches do not compile new classes either. With that, level micro-batches on generated code
(``spark.interpreted_max_records: 0``) took the same time per micro-batch at 1,000 events/s as
interpreted ones, with fewer compilations at 10,000 events/s afterwards; one run each, too few to change
the default (``docs/performance.md``).

Interpreted against generated code, measured at 1,000 events/s on 2 cores after 2 minutes of load, with
the per-batch values still inlined into the generated code (``docs/performance.md``): micro-batches
1.8 s -> 1.4 s on average, latency p50 3.01 s -> 2.57 s, p99 6.33 s -> 5.40 s, no classes loaded per
micro-batch. Bigger micro-batches keep the generated code: at 10,000 events/s (25-35K records each)
interpreted evaluation was slower (p50 5.04 s -> 5.98 s), and catch-up micro-batches of hundreds of
thousands of records need its per-record speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_jobs.io.lineage import offset_log_entry


def planned_records(checkpoint: Path, batch_id: int, end: dict[str, Any]) -> int | None:
    """Kafka records in micro-batch ``batch_id``, whose source offsets ``end`` the caller read from its
    offset-log entry, minus the previous entry's; None when that entry is gone (the first
    micro-batch of a checkpoint)."""
    if batch_id == 0 or not (checkpoint / "offsets" / str(batch_id - 1)).exists():
        return None
    _, start = offset_log_entry(checkpoint, batch_id - 1)
    return records_between(start, end)


def records_between(start: dict[str, Any], end: dict[str, Any]) -> int:
    """Records between two Kafka source offsets ``{topic: {partition: next offset}}`` (a partition
    new in ``end`` counts from 0)."""
    total = 0
    for topic, parts in end.items():
        before = start.get(topic, {})
        total += sum(int(offset) - int(before.get(part, 0)) for part, offset in parts.items())
    return total


def use_for(spark: Any, records: int | None, interpreted_max_records: int) -> bool:
    """Set the session's execution for a micro-batch of ``records`` (``interpreted_max_records``: the
    setting ``spark.interpreted_max_records``); True = interpreted."""
    interpreted = records is not None and records <= interpreted_max_records
    spark.conf.set("spark.sql.codegen.wholeStage", "false" if interpreted else "true")
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN" if interpreted else "FALLBACK")
    return interpreted
