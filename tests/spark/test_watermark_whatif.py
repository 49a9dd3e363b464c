"""``transforms.watermark_whatif`` against answers worked out by hand (in the comments), and its session
drop rule against Spark's own stateful ``session_window`` query, the one the speed job runs.

Times are seconds after T0 (2026-01-01 00:00 UTC, a whole minute); each event is (id, key, event time,
arrival, micro-batch time). Events are built from epoch milliseconds, so the host's zone plays no part.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lakehouse.pipeline import load_pipeline
from spark_jobs.transforms import watermark_whatif as ww

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark
T0 = 1_767_225_600_000


def frame(spark: SparkSession, key: str, rows: list[tuple[str, str, int, int, int]]) -> DataFrame:
    from pyspark.sql import functions as F

    data = [(i, k, T0 + et * 1000, T0 + arr * 1000, T0 + bt * 1000, n) for n, (i, k, et, arr, bt) in enumerate(rows)]
    df = spark.createDataFrame(data, f"event_id string, {key} string, et long, arr long, bt long, kafka_offset long")
    return df.select("event_id", key, F.timestamp_millis("et").alias("event_time"),
                     F.timestamp_millis("arr").alias("kafka_timestamp"), F.lit(0).alias("kafka_partition"),
                     "kafka_offset", F.timestamp_millis("bt").alias("batch_time"))


def summary(spark: SparkSession, p: Any, events: DataFrame, delays: list[int],
            trigger_seconds: int = 1) -> dict[int, dict[str, Any]]:
    frame_of_delays = spark.createDataFrame([(d * 1000,) for d in delays], "delay_ms bigint")
    rows = ww.summary(p, events, frame_of_delays, trigger_seconds).collect()
    return {r.delay_ms // 1000: r.asDict() for r in rows}


def assert_rows(got: dict[int, dict[str, Any]], expected: dict[int, dict[str, Any]]) -> None:
    assert set(got) == set(expected)
    for delay, row in expected.items():
        assert {k: got[delay][k] for k in row} == pytest.approx(row), delay


# sensor_readings: tumbling 1-minute windows, max_future_skew 2 minutes; the stateless query drops an
# event whose time is BEFORE the micro-batch's watermark.
TUMBLING = [
    # micro-batch B1 at 100: max event time 90
    ("e1", "s1", 10, 95, 100), ("e2", "s1", 50, 96, 100), ("e3", "s1", 90, 97, 100),
    # B2 at 130: max 125
    ("e4", "s1", 45, 125, 130), ("e5", "s1", 125, 126, 130),
    # B3 at 160: max 155, or 200 where e10 is not quarantined; e2's second copy never counts
    ("e6", "s1", 55, 150, 160), ("e9", "s2", 20, 152, 160), ("e7", "s1", 155, 155, 160),
    ("e2", "s1", 50, 158, 160), ("e10", "s1", 200, 158, 160),  # e10: 42 s ahead of its arrival
    # B4 at 250
    ("e8", "s1", 240, 245, 250),
]


def test_tumbling_drops_wrong_windows_and_finality_by_hand(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")
    got = summary(spark, p, frame(spark, "sensor_id", TUMBLING), [30, 60, 120])
    # 10 distinct events; exact windows: s1 [0,60) {e1,e2,e4,e6}, s2 [0,60) {e9}, s1 [60,120) {e3},
    # s1 [120,180) {e5,e7}, s1 [180,240) {e10}, s1 [240,300) {e8}: 6 windows.
    # d=30: e10 is 42 s ahead > min(120, 30): quarantined, so it moves no watermark.
    #   B2 runs with 90-30 = 60: e4 (45) dropped. B3 with 125-30 = 95: e6 (55), e9 (20) dropped.
    #   B4 with 155-30 = 125: e8 counted. Wrong: s1 [0,60), s2 [0,60) (missing), s1 [180,240) (missing).
    #   Watermark after B1..B4: 60, 95, 125, 210. End 60 final at B1 (100): 40 s (two windows); end 120
    #   at B3 (160): 40 s; end 180 at B4 (250): 70 s; ends 240 and 300 never. [40, 40, 40, 70]:
    #   p50 (index 1.5) 40, p95 (index 2.85) 40 + 0.85 * 30 = 65.5, max 70.
    # d=60: e10 counted (42 <= 60). B2 with 30: e4 counted. B3 with 65: e6, e9 dropped. Wrong: the two
    #   [0,60) windows. After B1..B4: 30, 65, 200-60 = 140, 180. End 60 at B2 (130): 70 s twice; 120 at
    #   B3: 40 s; 180 at B4: 70 s. [40, 70, 70, 70]: p50 70, p95 70, max 70.
    # d=120: B2 with -30, B3 with 5: nothing dropped, nothing wrong. After: -30, 5, 80, 120. End 60 at
    #   B3 (160): 100 s twice; 120 at B4 (250): 130 s; 180 and later never. [100, 100, 130]: p50 100,
    #   p95 (index 1.9) 100 + 0.9 * 30 = 127, max 130.
    expected = {
        30: dict(events=10, dropped=3, quarantined=1, windows=6, wrong_windows=3, final_windows=4,
                 finality_p50_s=40.0, finality_p95_s=65.5, finality_max_s=70.0),
        60: dict(events=10, dropped=2, quarantined=0, windows=6, wrong_windows=2, final_windows=4,
                 finality_p50_s=70.0, finality_p95_s=70.0, finality_max_s=70.0),
        120: dict(events=10, dropped=0, quarantined=0, windows=6, wrong_windows=0, final_windows=3,
                  finality_p50_s=100.0, finality_p95_s=127.0, finality_max_s=130.0),
    }
    assert_rows(got, expected)


def test_an_event_exactly_at_the_watermark_is_on_time_in_tumbling_windows(spark: SparkSession) -> None:
    p = load_pipeline("sensor_readings")
    # B2 runs with 100 - 30 = 70: "at" (70) is on time (not before it), "before" (69) is dropped
    rows = [("a", "s1", 100, 101, 102), ("at", "s1", 70, 103, 104), ("before", "s1", 69, 103, 104)]
    got = summary(spark, p, frame(spark, "sensor_id", rows), [30])
    assert got[30]["dropped"] == 1


# game_sessions: sessions with a 5-minute (300 s) gap, max_future_skew 10 minutes. Spark's session
# operator drops an event AT or before the watermark (test_the_session_rule_is_sparks_own below).
SESSIONS = [
    ("a1", "u1", 100, 990, 1000), ("a2", "u1", 250, 991, 1000), ("a3", "u1", 900, 992, 1000),  # B1: max 900
    ("a4", "u1", 700, 1090, 1100), ("a5", "u2", 1050, 1095, 1100),                           # B2: max 1050
    ("a6", "u1", 460, 1400, 1500), ("a7", "u2", 1400, 1450, 1500),                           # B3: max 1400
    ("a8", "u3", 2400, 2450, 2500),                                                          # B4: max 2400
]


def test_sessions_drops_wrong_windows_and_finality_by_hand(spark: SparkSession) -> None:
    p = load_pipeline("game_sessions")
    got = summary(spark, p, frame(spark, "user_id", SESSIONS), [60, 300, 600])
    # Exact sessions (8 events): u1 100, 250, 460, 700, 900 -> one session [100, 1200) (a6 bridges
    # [100,550) and a4 [700,1000) joins a3's [900,1200)); u2 [1050,1350), u2 [1400,1700), u3 [2400,2700).
    # d=60: B2 runs with 900-60 = 840: a4 (700) dropped; B3 with 990: a6 (460) dropped. u1's speed
    #   sessions are [100,550) and [900,1200): the exact u1 session is wrong; 1 of 4.
    #   After B1..B4: 840, 990, 1340, 2340. End 1200 final at B3 (1500): 300 s; 1350 at B4 (2500):
    #   1150 s; 1700 at B4: 800 s; 2700 never. [300, 800, 1150]: p50 800, p95 (index 1.9)
    #   800 + 0.9 * 350 = 1115, max 1150.
    # d=300: B2 with 600: a4 counted; B3 with 750: a6 (460) dropped, although its own gap-extended
    #   session end (760) is past 750. u1: [100,550) and [700,1200): wrong, 1 of 4. After: 600, 750,
    #   1100, 2100. End 1200 at B4: 1300 s; 1350: 1150 s; 1700: 800 s. p50 1150, p95 1150 + 0.9 * 150
    #   = 1285, max 1300.
    # d=600: B2 with 300, B3 with 450: a6 (460) counted; nothing dropped, nothing wrong. After: 300, 450,
    #   800, 1800: the same finality as d=300.
    expected = {
        60: dict(events=8, dropped=2, windows=4, wrong_windows=1, final_windows=3,
                 finality_p50_s=800.0, finality_p95_s=1115.0, finality_max_s=1150.0),
        300: dict(events=8, dropped=1, windows=4, wrong_windows=1, final_windows=3,
                  finality_p50_s=1150.0, finality_p95_s=1285.0, finality_max_s=1300.0),
        600: dict(events=8, dropped=0, windows=4, wrong_windows=0, final_windows=3,
                  finality_p50_s=1150.0, finality_p95_s=1285.0, finality_max_s=1300.0),
    }
    assert_rows(got, expected)


def test_sliding_windows_lose_a_dropped_event_from_every_window(spark: SparkSession) -> None:
    p = load_pipeline("lift_rides")  # 10-minute windows every 5 minutes, stateless: a late event leaves all
    rows = [("r1", "l1", 420, 430, 440), ("r2", "l1", 700, 710, 720),   # B1, B2
            ("late", "l1", 100, 800, 810)]                              # B3 runs with 700 - 60 = 640
    got = summary(spark, p, frame(spark, "lift_id", rows), [60, 900])
    # exact windows: [-300,300) {late}, [0,600) {late, r1}, [300,900) {r1, r2}, [600,1200) {r2}
    # d=60: "late" (100 < 640) dropped from both its windows: [-300,300) missing, [0,600) 1 instead of 2
    # d=900: B3 runs with -200: nothing dropped
    assert (got[60]["dropped"], got[60]["windows"], got[60]["wrong_windows"]) == (1, 4, 2)
    assert (got[900]["dropped"], got[900]["wrong_windows"]) == (0, 0)


def test_trigger_batches_start_at_the_next_boundary(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    events = frame(spark, "sensor_id", [("a", "s", 0, 0, 0), ("b", "s", 0, 4, 0), ("c", "s", 0, 5, 0)])
    got = events.transform(ww.trigger_batches(5)).select(
        "event_id", ((F.unix_millis("batch_time") - T0) / 1000).cast("int").alias("b")).collect()
    assert {r.event_id: r.b for r in got} == {"a": 5, "b": 5, "c": 10}


@pytest.mark.parametrize("adjacent", [False, True], ids=["idle triggers between", "back to back"])
def test_the_session_rule_is_sparks_own(spark: SparkSession, tmp_path: Path, adjacent: bool) -> None:
    """The speed job's session query (``with_watermark_dedup`` + ``windowed_aggregate``, append mode), fed
    SESSIONS plus a9 one micro-batch per file, emits exactly the model's sessions at its own watermark (300 s).
    Idle triggers between: one ``availableNow`` run per file (Spark adds a no-data micro-batch after each);
    back to back: one run over all files, one file per micro-batch."""
    import os

    from pyspark.sql import functions as F

    from spark_jobs.transforms.windows import windowed_aggregate, with_watermark_dedup

    p = dataclasses.replace(load_pipeline("game_sessions"), watermark="5 minutes", max_future_skew="5 minutes")
    schema = "event_id string, user_id string, timestamp long, action string, points int"
    emitted: list[tuple[str, int, int, int]] = []

    def sink(df: DataFrame, _: int) -> None:
        emitted.extend((r.user_id, r.s, r.e, r.event_count) for r in df.select(
            "user_id", "event_count", ((F.unix_millis("window_start") - T0) / 1000).cast("int").alias("s"),
            ((F.unix_millis("window_end") - T0) / 1000).cast("int").alias("e")).collect())

    def run_query(**options: str) -> None:
        query = (spark.readStream.schema(schema).options(**options).json(str(tmp_path / "in"))
                 .withColumn("event_time", F.timestamp_millis("timestamp"))
                 .transform(with_watermark_dedup(p)).transform(windowed_aggregate(p, streaming=True))
                 .writeStream.outputMode("append").foreachBatch(sink)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()

    rows = [*SESSIONS, ("a9", "u4", 550, 1096, 1100)]  # in B2: 550 <= 900 - 300, the watermark B2 runs with
    if adjacent:  # micro-batches one trigger interval (1 s) apart
        rows = [(i, k, et, arr, {1000: 1, 1100: 2, 1500: 3, 2500: 4}[bt]) for i, k, et, arr, bt in rows]
    batches: dict[int, list[dict[str, Any]]] = {}
    for i, k, et, _, bt in [*rows, ("flush", "u9", 99_000, 99_000, 99_000)]:  # the last one ends them all
        batches.setdefault(bt, []).append({"event_id": i, "user_id": k, "timestamp": T0 + et * 1000,
                                           "action": "x", "points": 1})
    (tmp_path / "in").mkdir()
    for n, bt in enumerate(sorted(batches)):
        path = tmp_path / "in" / f"{n:03d}.json"
        path.write_text("".join(json.dumps(e) + "\n" for e in batches[bt]))
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))  # the file source reads files in this order
        if not adjacent:
            run_query()
    if adjacent:
        run_query(maxFilesPerTrigger="1")

    events = frame(spark, "user_id", rows)
    delays = spark.createDataFrame([(300_000,)], "delay_ms bigint")
    counted = ww.classify(p, events, delays, ww.watermarks(p, events, delays, 1)).where("status = 'counted'")
    model = {(r.user_id, r.s, r.e, r.n) for r in ww.window_counts(p, counted).select(
        "user_id", "n", ((F.unix_millis("window_start") - T0) / 1000).cast("int").alias("s"),
        ((F.unix_millis("window_end") - T0) / 1000).cast("int").alias("e")).collect()}
    # a6 (460 <= 750 in B3) is dropped either way, so u1 is two sessions: its gap-extended end (760) does not
    # save it. a9 is judged by B1's watermark (none) back to back, by a no-data micro-batch's (600) otherwise.
    expected = {("u1", 100, 550, 2), ("u1", 700, 1200, 2), ("u2", 1050, 1350, 1), ("u2", 1400, 1700, 1),
                ("u3", 2400, 2700, 1)} | ({("u4", 550, 850, 1)} if adjacent else set())
    assert model == expected
    assert set(emitted) == model


def test_refusals_name_the_fix(spark: SparkSession) -> None:
    from lakehouse.errors import NothingToDo, TidewaterError
    from spark_jobs.analysis.whatif import analyse

    p = load_pipeline("sensor_readings")
    with pytest.raises(NothingToDo, match=r"bronze.sensor_readings does not exist yet; start the speed job"):
        analyse(spark, p, [30], 0.001, "recorded", 1)
    with pytest.raises(TidewaterError, match="use --batches recorded or set spark.trigger_seconds"):
        analyse(spark, p, [30], 0.001, "trigger", 0)
