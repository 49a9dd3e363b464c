"""Kafka records -> typed events or quarantine rows, with DataFrame expressions only (no UDFs).

Input: the Kafka source's columns (``value`` binary, ``topic``, ``partition``, ``offset``,
``timestamp``). ``classify(pipeline)`` adds every schema field typed, ``event_time`` (timestamp),
the Kafka coordinates, ``ingest_time``, and ``reason_code``/``reason`` (null for a usable event).

Reason codes, first match wins:
``MALFORMED_JSON`` (not a JSON object), ``MISSING_FIELD`` (absent or null), ``NULL_ID`` /
``NULL_KEY`` (event id or a grouping key null or empty), ``WRONG_TYPE`` (value not of the declared
type), ``IMPOSSIBLE_TIMESTAMP`` (before 2000-01-01), ``FUTURE_TIMESTAMP`` (more than the pipeline's
``max_future_skew`` after the record's Kafka timestamp, which topics take from the broker's clock:
``LogAppendTime``; deterministic, so a replay classifies every record as ingest did).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING

from lakehouse.contracts import MIN_EVENT_MS
from lakehouse.pipeline import FIELD_TYPES, Pipeline

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

BRONZE_META = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "ingest_time")
QUARANTINE_COLUMNS = (
    "raw_value", "kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp",
    "reason_code", "reason", "ingest_time",
)


def with_kafka_metadata(df: DataFrame, ingest_time: Column | None = None) -> DataFrame:
    """Rename the Kafka source columns to the bronze/quarantine names and stamp ingest time
    (``ingest_time``; None: ``current_timestamp()``, which a streaming micro-batch's plan turns into a
    literal of its own time, compiled into its generated code: see ``speed.micro_batch_values``)."""
    from pyspark.sql import functions as F

    return df.select(
        F.col("value").cast("string").alias("raw_value"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        (F.current_timestamp() if ingest_time is None else ingest_time).alias("ingest_time"),
    )


def _checks(p: Pipeline) -> list[tuple[Column, str, Column]]:
    """(failed?, code, human reason) per check, in priority order."""
    from pyspark.sql import functions as F

    obj = F.col("_json")
    out: list[tuple[Column, str, Column]] = [
        (obj.isNull(), "MALFORMED_JSON", F.lit("value is not a JSON object")),
    ]
    for name in p.schema:
        out.append((~F.map_contains_key(obj, name), "MISSING_FIELD", F.lit(f"required field '{name}' is missing")))
    for name in p.schema:
        code = "NULL_ID" if name == p.event_id else "NULL_KEY" if name in p.keys else "MISSING_FIELD"
        blank = obj[name].isNull() | ((F.trim(obj[name]) == "") if name in p.required_strings else F.lit(False))
        out.append((blank, code, F.lit(f"field '{name}' is null or empty")))
    for name, typ in p.schema.items():
        out.append((
            F.col(f"_typed_{name}").isNull(), "WRONG_TYPE",
            F.concat(F.lit(f"field '{name}' is not a {typ}: "), F.substring(obj[name], 1, 80)),
        ))
    ts = F.col(f"_typed_{p.event_time}")
    arrived_ms = F.unix_millis(F.col("kafka_timestamp"))
    out.append((ts < F.lit(MIN_EVENT_MS), "IMPOSSIBLE_TIMESTAMP",
                F.concat(F.lit(f"field '{p.event_time}' = "), ts.cast("string"), F.lit(" ms is before 2000-01-01"))))
    out.append((
        ts > arrived_ms + F.lit(p.future_skew_seconds * 1000), "FUTURE_TIMESTAMP",
        F.concat(F.lit(f"field '{p.event_time}' = "), ts.cast("string"), F.lit(" ms is "),
                 ((ts - arrived_ms) / 1000).cast("bigint").cast("string"),
                 F.lit(f" s after the record reached Kafka (max_future_skew: {p.max_future_skew}); "
                       "check the producer's clock")),
    ))
    return out


def _usable(p: Pipeline) -> Column:
    """True exactly when no check of :func:`_checks` fails, from the typed fields alone: a typed field is
    null when its key is missing, its value null or of the wrong type, or the value is not an object.
    Cheaper than the checks, which then run only for the few records that are not usable (a 500,000-record
    micro-batch classified in 1.79 s instead of 2.21 s: docs/performance.md)."""
    from pyspark.sql import functions as F

    ts = F.col(f"_typed_{p.event_time}")
    arrived_ms = F.unix_millis(F.col("kafka_timestamp"))
    passes = [F.col(f"_typed_{name}").isNotNull() for name in p.schema]
    # a check whose condition is null does not fail (SQL's CASE WHEN): the same here
    passes += [~F.coalesce(F.trim(F.col(f"_typed_{name}")) == "", F.lit(False)) for name in p.required_strings]
    passes += [ts >= F.lit(MIN_EVENT_MS), ~F.coalesce(ts > arrived_ms + F.lit(p.future_skew_seconds * 1000), F.lit(False))]
    return reduce(lambda a, b: a & b, passes)


def classify(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Parse ``raw_value`` (after :func:`with_kafka_metadata`) and attach a reason when unusable."""

    def _classify(df: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        df = df.withColumn("_json", F.from_json("raw_value", "map<string,string>"))
        for name, typ in p.schema.items():
            df = df.withColumn(f"_typed_{name}", F.col("_json")[name].try_cast(FIELD_TYPES[typ]))
        code = F.lit(None).cast("string")
        reason = F.lit(None).cast("string")
        for failed, c, text in reversed(_checks(p)):
            code = F.when(failed, F.lit(c)).otherwise(code)
            reason = F.when(failed, text).otherwise(reason)
        # the checks run only for a record that is not plainly usable: most records are
        df = df.withColumn("_usable", _usable(p))
        unusable_only = {"reason_code": code, "reason": reason}
        for name, value in unusable_only.items():
            df = df.withColumn(name, F.when(F.col("_usable"), F.lit(None).cast("string")).otherwise(value))
        typed = [F.col(f"_typed_{n}").alias(n) for n in p.schema]
        event_time = F.timestamp_millis(F.col(f"_typed_{p.event_time}")).alias("event_time")
        return df.select(*typed, event_time, "raw_value", *BRONZE_META, "reason_code", "reason")

    return _classify


def valid_events(df: DataFrame) -> DataFrame:
    """Rows of :func:`classify` output that are usable events (bronze rows)."""
    return df.where("reason_code IS NULL").drop("reason_code", "reason", "raw_value")


def quarantined(df: DataFrame) -> DataFrame:
    """Rows of :func:`classify` output that are not usable, with raw value and reason."""
    return df.where("reason_code IS NOT NULL").select(*QUARANTINE_COLUMNS)
