"""Parsing Kafka values: valid events are typed, every bad record gets the right reason code."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from lakehouse.pipeline import load_pipeline
from spark_jobs.transforms.parse import classify, quarantined, valid_events

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

ARRIVED = datetime(2026, 1, 1, tzinfo=UTC)  # the records' Kafka (broker) timestamp
NOW_MS = int(ARRIVED.timestamp() * 1000)


def _kafka_rows(spark: SparkSession, values: list[str | None]) -> DataFrame:
    rows = [(v.encode() if v is not None else None, "sensor-readings", 0, i, ARRIVED, ARRIVED)
            for i, v in enumerate(values)]
    return spark.createDataFrame(
        rows, "value binary, kafka_topic string, kafka_partition int, kafka_offset bigint, kafka_timestamp timestamp, "
              "ingest_time timestamp").selectExpr("cast(value as string) as raw_value", "*").drop("value")


def test_reason_codes(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")
    good = {"event_id": "e1", "sensor_id": "s1", "timestamp": NOW_MS, "temperature": 21.5}
    cases = {
        "ok": json.dumps(good),
        "MALFORMED_JSON": '{"event_id": "e2", ',
        "MALFORMED_JSON_ARRAY": "[1, 2]",
        "MISSING_FIELD": json.dumps({k: v for k, v in good.items() if k != "temperature"}),
        "NULL_ID": json.dumps({**good, "event_id": None}),
        "NULL_ID_EMPTY": json.dumps({**good, "event_id": "  "}),
        "NULL_KEY": json.dumps({**good, "sensor_id": None}),
        "WRONG_TYPE": json.dumps({**good, "temperature": "hot"}),
        "WRONG_TYPE_TS": json.dumps({**good, "timestamp": "yesterday"}),
        "IMPOSSIBLE_TIMESTAMP": json.dumps({**good, "timestamp": 5}),
        "FUTURE_TIMESTAMP": json.dumps({**good, "timestamp": NOW_MS + 3 * 86_400_000}),
        # a clock just past max_future_skew fast, and one exactly at it
        "FUTURE_TIMESTAMP_SKEW": json.dumps({**good, "timestamp": NOW_MS + p.future_skew_seconds * 1000 + 1}),
        "ok_skew": json.dumps({**good, "event_id": "e9", "timestamp": NOW_MS + p.future_skew_seconds * 1000}),
    }
    df = _kafka_rows(spark, list(cases.values())).transform(classify(p))
    got = {r.kafka_offset: (r.reason_code, r.reason) for r in quarantined(df).collect()}
    for i, name in enumerate(cases):
        if name.startswith("ok"):
            assert i not in got
            continue
        code = name.replace("_ARRAY", "").replace("_EMPTY", "").replace("_TS", "").replace("_SKEW", "")
        assert got[i][0] == code, (name, got[i])
        assert got[i][1], name
    assert "temperature" in got[3][1] and "hot" in got[7][1]
    valid = sorted(valid_events(df).collect(), key=lambda r: r.event_id)
    assert [r.event_id for r in valid] == ["e1", "e9"]
    assert valid[0].temperature == 21.5 and valid[0].event_time.astimezone(UTC) == ARRIVED
    q = quarantined(df).where("kafka_offset = 1").collect()[0]
    assert q.raw_value == cases["MALFORMED_JSON"] and q.kafka_topic == "sensor-readings"


def test_edge_cases_of_the_json_values(spark: SparkSession) -> None:
    """Extra and nested fields, numbers sent as text and text sent as numbers, nulls, names in another
    case, JSON that is not an object, and text after the object: each gets its reason (or none)."""
    p = load_pipeline("sensor_readings")
    good = {"event_id": "e1", "sensor_id": "s1", "timestamp": NOW_MS, "temperature": 21.5}
    cases = [
        (json.dumps({**good, "extra": {"nested": [1, 2]}}), None),  # more fields than the schema: valid
        (json.dumps({**good, "event_id": 7, "temperature": "21.5"}), None),  # numbers as text and back
        (json.dumps({**good, "temperature": {"x": 1}}), "WRONG_TYPE"),  # an object where a double belongs
        (json.dumps({**good, "timestamp": None, "temperature": None}), "MISSING_FIELD"),  # explicit nulls
        (json.dumps({k: v for k, v in good.items() if k != "event_id"}), "MISSING_FIELD"),
        (json.dumps({**good, "Event_ID": "e1"} | {"event_id": None}), "NULL_ID"),  # names are case-sensitive
        ("{}", "MISSING_FIELD"),
        ("null", "MALFORMED_JSON"),
        ('"a string"', "MALFORMED_JSON"),
        (json.dumps(good) + " trailing", None),  # Spark's JSON reader stops after the object
    ]
    df = _kafka_rows(spark, [v for v, _ in cases]).transform(classify(p))
    rows = {r.kafka_offset: r for r in df.collect()}
    assert {i: rows[i].reason_code for i in rows} == {i: code for i, (_, code) in enumerate(cases)}
    assert (rows[0].event_id, rows[0].sensor_id, rows[0].temperature) == ("e1", "s1", 21.5)
    assert (rows[1].event_id, rows[1].temperature) == ("7", 21.5)
    assert "is not a double" in rows[2].reason and '{"x":1}' in rows[2].reason


def test_shortcut_for_usable_records_agrees_with_every_check(spark: SparkSession) -> None:
    """``classify`` runs its checks only for records that are not plainly usable (``parse._usable``):
    every record, bad or good, a Kafka timestamp missing included, gets the code that the first failing
    check gives when all of them run."""
    from pyspark.sql import functions as F

    from spark_jobs.transforms.parse import _checks

    p = load_pipeline("sensor_readings")
    good = {"event_id": "e1", "sensor_id": "s1", "timestamp": NOW_MS, "temperature": 21.5}
    values: list[str | None] = [json.dumps(good), json.dumps({**good, "sensor_id": " "}), json.dumps({**good, "event_id": ""}),
              json.dumps({**good, "timestamp": NOW_MS + 86_400_000}), json.dumps({**good, "timestamp": 1}),
              json.dumps({**good, "temperature": None}), json.dumps({**good, "timestamp": 1.5}), "[]", "{}", "x"]
    rows = _kafka_rows(spark, values)
    rows = rows.unionByName(rows.withColumn("kafka_offset", F.col("kafka_offset") + 100)
                            .withColumn("kafka_timestamp", F.lit(None).cast("timestamp")))
    got = {r.kafka_offset: r.reason_code for r in rows.transform(classify(p)).collect()}
    parsed = rows.withColumn("_json", F.from_json("raw_value", "map<string,string>"))
    from lakehouse.pipeline import FIELD_TYPES

    for name, typ in p.schema.items():
        parsed = parsed.withColumn(f"_typed_{name}", F.col("_json")[name].try_cast(FIELD_TYPES[typ]))
    first_failing = F.lit(None).cast("string")
    for failed, code, _ in reversed(_checks(p)):
        first_failing = F.when(failed, F.lit(code)).otherwise(first_failing)
    expected = {r.kafka_offset: r.code for r in parsed.select("kafka_offset", first_failing.alias("code")).collect()}
    assert got == expected
    assert got[0] is None and got[100] is None and got[103] is None  # no Kafka timestamp: no future check
    assert got[3] == "FUTURE_TIMESTAMP" and got[1] == "NULL_KEY" and got[104] == "IMPOSSIBLE_TIMESTAMP"
