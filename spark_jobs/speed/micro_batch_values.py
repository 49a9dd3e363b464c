"""Values that change with every micro-batch, as columns that Spark evaluates instead of compiling.

Spark's whole-stage code generation writes literals of timestamp, long and int type into the Java
source it compiles (``Literal.doGenCode``), and its code cache is keyed by that source. A micro-batch
query that carries a value of its own (the watermark, the dedup horizon, the micro-batch id, the
write time) therefore compiled new classes in every micro-batch: janino on the driver's critical
path, then class loading, and the JVM's JIT compiling the new classes' hot loops again. Measured at
10,000 events/s on 2 cores (``docs/performance.md``): 150-530 classes loaded per 25 s and the
C2 compiler at 30-37% of the speed JVM's CPU.

The columns here hold such a value in Spark's own ``CurrentBatchTimestamp`` expression (a timestamp in
milliseconds that is evaluated, never folded into a literal): the generated code references it, so its
source, and its class, are the same in every micro-batch. Being non-deterministic to the optimizer, a
filter on it is never pushed into a file scan: use a plain literal where data skipping matters (a
bronze read), these where the rows are in memory.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from infra.py4j_lookups import jvm_class
from infra.utc import aware_in_utc


def timestamp(spark: Any, at: datetime) -> Any:
    """``at`` (to the millisecond; timezone-aware, since a naive datetime would be read in the host's
    zone) as a TIMESTAMP column outside the generated code."""
    return _millis(spark, int(aware_in_utc(at, "batch_values.timestamp").timestamp() * 1000))


def whole_number(spark: Any, n: int) -> Any:
    """``n`` (>= 0) as a BIGINT column outside the generated code."""
    from pyspark.sql import functions as F

    if n < 0:
        raise ValueError(f"batch_values.whole_number takes n >= 0, not {n}")
    return F.unix_millis(_millis(spark, n))


def _millis(spark: Any, ms: int) -> Any:
    """A TIMESTAMP column of ``ms`` milliseconds after the epoch, held in a ``CurrentBatchTimestamp``."""
    from pyspark.sql import Column

    data_type = getattr(jvm_class(spark, "org.apache.spark.sql.types.TimestampType$"), "MODULE$")
    expression = jvm_class(spark, "org.apache.spark.sql.catalyst.expressions.CurrentBatchTimestamp")(
        ms, data_type, jvm_class(spark, "scala.Some")("UTC"))
    return Column(jvm_class(spark, "org.apache.spark.sql.classic.ExpressionUtils").column(expression))


def compilations(spark: Any) -> int:
    """Classes the JVM's Spark has compiled from generated code so far (Spark's codegen metrics)."""
    return int(jvm_class(spark, "org.apache.spark.metrics.source.CodegenMetrics").METRIC_COMPILATION_TIME().getCount())
