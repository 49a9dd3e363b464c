"""Kappa mode end to end: the speed layer serves, ``replay`` rebuilds history from the Kafka log
into version 2 while events keep flowing, and switches atomically; ``--rollback`` switches back to
version 1 and then forward again to version 2.

While the replay runs, a reader polls ``serving.sensor_readings``: no (sensor, window) may ever
appear twice, and no window it has seen may disappear. Afterwards the replayed table equals the
batch computation over bronze (the batch layer's own transform) and an exact plain-Python answer.
A replay of events far behind every watermark keeps, in ``late.<p>``, exactly what a plain-Python
oracle says its micro-batches dropped, and the ledger links the windows they miss to them.
After each rollback, more events: every Kafka offset is in bronze exactly once, and the serving view
equals the oracle (a version that froze at a switch continues where it stopped, never counting again
what another lineage counted).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.speed_helpers import MINUTE, cli, encode, event, expected_tumbling, late_rows, send, speed_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]
HOST_TZ = "Asia/Kolkata"  # east of UTC: see the host_time_zone fixture

PIPELINE, TOPIC = "sensor_readings", "sensor-readings"


@pytest.fixture(scope="module")
def cfg(tw_env: dict[str, str]) -> Iterator[TidewaterConfig]:
    """This module's stack runs in kappa mode (the subprocesses inherit the setting)."""
    from lakehouse.config import load_config

    os.environ["TIDEWATER_MODE"] = "kappa"
    yield load_config()
    os.environ.pop("TIDEWATER_MODE", None)


class ServingReader(threading.Thread):
    """Polls the serving view; records duplicate windows and windows that vanished."""

    def __init__(self, spark: SparkSession) -> None:
        super().__init__(daemon=True)
        self.spark, self.stopping = spark, threading.Event()
        self.polls = 0
        self.duplicates: list[Any] = []  # failed queries and samples of duplicate windows
        self.vanished: list[Any] = []
        self.seen: set[tuple[str, Any]] = set()

    def view_table(self) -> str:
        from spark_jobs.shared.serving_view import view_text

        try:
            return view_text(self.spark, "serving.sensor_readings").rsplit(" FROM ", 1)[-1]
        except Exception as exc:
            return f"unreadable: {exc.__class__.__name__}"

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                rows = self.spark.sql("SELECT sensor_id, window_start FROM serving.sensor_readings").collect()
            except Exception as exc:  # a reader must never fail, not even during the switch
                self.duplicates.append(f"query failed: {exc}")
                return
            keys = [(r.sensor_id, r.window_start) for r in rows]
            if len(keys) != len(set(keys)):  # with the table the view read then, for the diagnosis
                self.duplicates.append((sorted({k for k in keys if keys.count(k) > 1})[:5], self.view_table()))
            gone = self.seen - set(keys)
            if gone:
                self.vanished.append((time.strftime("%H:%M:%S"), sorted(gone)[:5]))
            self.seen |= set(keys)
            self.polls += 1
            time.sleep(0.5)


def replay_diagnosis(cfg: TidewaterConfig) -> list[Any]:
    """For a failure message only (windows seen in version 1 and missing from version 2):
    per micro-batch of version 2, its lineage, rows, events dropped by the watermark, watermark and end offsets."""
    from spark_jobs.io.ops_reader import read_rows

    try:
        rows = [r for r in read_rows(cfg, "ops.stream_progress")
                if r["pipeline"] == PIPELINE and r["query"] == "speed" and r["query_version"] == 2]
        return [(r["run_id"][:8], r["batch_id"], r["input_rows"], r["rows_dropped_by_watermark"], str(r["watermark"]),
                 r["end_offsets"]) for r in sorted(rows, key=lambda r: (str(r["recorded_at"]), r["batch_id"]))]
    except Exception as exc:  # the diagnosis must never hide the failure it explains
        return [f"no diagnosis: {type(exc).__name__}: {exc}"]


def duplicate_windows(spark: SparkSession, table: str) -> list[Any]:
    """(sensor, window) keys that ``table`` holds more than once, with the Delta versions that wrote them."""
    return spark.sql(f"SELECT sensor_id, window_start, count(*) AS n, collect_list(batch_id) AS batches FROM {table} "
                     "GROUP BY 1, 2 HAVING n > 1").collect()


def test_replay_switches_atomically_under_load_and_equals_batch(spark: SparkSession, stack: TidewaterConfig) -> None:
    from infra.services.process import wait_until
    from lakehouse.pipeline import load_pipeline
    from lakehouse.speed_versions import active_version
    from spark_jobs.batch import bronze as batch_bronze
    from spark_jobs.io.kafka_admin import ensure_topic, topic_config
    from spark_jobs.replay import job as replay
    from spark_jobs.shared.serving_view import refresh_view
    from spark_jobs.speed.control import start_speed, stop_speed, wait_caught_up
    from spark_jobs.transforms import incremental
    from spark_jobs.transforms.windows import dedup_history

    cfg = stack
    assert cfg.mode == "kappa"
    p = load_pipeline(PIPELINE, cfg.pipelines)
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap)  # created earlier in lambda mode: 7 days
    admin.create_topics([NewTopic(TOPIC, cfg.kafka.partitions, 1, topic_configs={
        "retention.ms": "604800000", "message.timestamp.type": "LogAppendTime"})])
    admin.close()
    assert not ensure_topic(cfg, TOPIC)
    assert wait_until(lambda: topic_config(cfg, TOPIC).get("retention.ms") == "-1", 30)  # kappa keeps the whole log
    t0 = (int(time.time() * 1000) - 3_600_000) // MINUTE * MINUTE
    sensors = ["k-a", "k-b", "k-c"]
    sent = [event(f"h{s}{i:03d}", s, t0 + i * 10_000, 15.0 + (i % 9) + k) for k, s in enumerate(sensors)
            for i in range(60)]
    sent += sent[:6]  # duplicates in the log
    send(cfg, TOPIC, encode(sent))
    start_speed(cfg, p, wait=300)
    assert wait_caught_up(cfg, p, timeout=300)

    reader = ServingReader(spark)
    reader.start()
    flowing = threading.Event()

    def keep_producing() -> None:  # events keep arriving during the replay: 10 minutes on from t0
        i = 0
        while not flowing.is_set():
            batch_ = [event(f"f{i:04d}{s}", s, t0 + 10 * MINUTE + i * 2_000, 20.0) for s in sensors]
            send(cfg, TOPIC, encode(batch_))
            sent.extend(batch_)
            i += 1
            time.sleep(1)

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    try:
        out = replay.replay(cfg, p, refresh=lambda v: refresh_view(spark, cfg, p, speed_version=v), timeout=900)
    finally:
        flowing.set()
        producer.join(60)
    assert out.from_version == 1 and out.to_version == 2 and active_version(cfg, PIPELINE) == 2
    assert wait_caught_up(cfg, p, version=2, timeout=300)
    time.sleep(10)  # a few more polls on the switched view
    reader.stopping.set()
    reader.join(60)
    stop_speed(cfg, p)
    print(f"\nreplay: {out}; serving polls during the replay: {reader.polls}")
    doubled = {t: duplicate_windows(spark, t) for t in ("speed.sensor_readings", "speed.sensor_readings__v2")}
    assert reader.polls >= 10 and reader.duplicates == [] and reader.vanished == [], (
        reader.duplicates[:3], doubled, reader.vanished[:3], replay_diagnosis(cfg))
    assert doubled == {"speed.sensor_readings": [], "speed.sensor_readings__v2": []}

    # the view now reads version 2, which holds every window of the whole log
    v2 = speed_rows(spark, "speed.sensor_readings__v2")
    assert set(speed_rows(spark, "serving.sensor_readings")) == set(v2)
    exact = expected_tumbling(sent)
    assert set(v2) == set(exact)
    for key, (count, avg, lo, hi) in exact.items():
        assert (v2[key].event_count, v2[key].min_temperature, v2[key].max_temperature) == (count, lo, hi), key
        assert v2[key].avg_temperature == pytest.approx(avg), key
    # ... and equals the batch layer's computation over bronze (same history, same shared transform)
    _version, snapshot = batch_bronze.bronze_snapshot(spark, cfg, p)
    far_future = snapshot.selectExpr("max(event_time) + INTERVAL 1 DAY").collect()[0][0]
    batch_rows = (incremental.all_windows(p, snapshot.transform(dedup_history(p)), far_future)
                  .selectExpr("*", "unix_millis(window_start) AS ws").collect())
    assert len(batch_rows) == len(v2)
    for r in batch_rows:
        row = v2[(r.sensor_id, r.ws)]
        assert (row.event_count, row.min_temperature, row.max_temperature) == (
            r.event_count, r.min_temperature, r.max_temperature)
        assert row.avg_temperature == pytest.approx(r.avg_temperature)

    # rollback and back again: each version continues where it froze, and every event counts once
    late_start = max(e["timestamp"] for e in sent) + MINUTE  # after everything so far: on time
    for part, target in enumerate((1, 2)):
        cli("replay", PIPELINE, "--rollback")
        assert active_version(cfg, PIPELINE) == target
        more = [event(f"r{part}{i:03d}{s}", s, late_start + part * 20 * MINUTE + i * 5_000, 18.0 + i % 7)
                for i in range(80) for s in sensors]
        send(cfg, TOPIC, encode(more))
        sent.extend(more)
        assert wait_caught_up(cfg, p, version=target, timeout=300)
        assert_counted_once(spark, cfg, sent, f"after rollback {part + 1} (v{target} active)")
    stop_speed(cfg, p)


def assert_counted_once(spark: SparkSession, cfg: TidewaterConfig, sent: list[dict[str, Any]], when: str) -> None:
    """Every Kafka offset in bronze (all records here are valid) exactly once, and the serving view (the
    active speed table, in kappa mode) equal to the plain-Python oracle: no window counts an event twice."""
    from benchmarks.correctness import offset_problems, spark_query

    problems = offset_problems(spark_query(spark), cfg, PIPELINE, TOPIC)
    assert not problems, f"{when}: every offset exactly once in bronze or quarantine: {problems}"
    spark.catalog.refreshTable("bronze.sensor_readings")
    assert spark.table("bronze.sensor_readings").count() == len(sent), when
    exact, served = expected_tumbling(sent), speed_rows(spark, "serving.sensor_readings")
    over = sorted(k for k in exact if k in served and served[k].event_count > exact[k][0])
    assert not over, f"{when}: {len(over)} windows count more events than were sent, e.g. {over[:3]}"
    assert set(served) == set(exact), when
    for key, (count, avg, lo, hi) in exact.items():
        assert (served[key].event_count, served[key].min_temperature, served[key].max_temperature) == (count, lo, hi), (
            when, key)
        assert served[key].avg_temperature == pytest.approx(avg), (when, key)


def kafka_records(spark: SparkSession, cfg: TidewaterConfig) -> dict[tuple[int, int], dict[str, Any]]:
    """Every record of the topic: (partition, offset) -> its event (all valid here)."""
    import json

    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", cfg.kafka.bootstrap).option("subscribe", TOPIC)
            .option("startingOffsets", "earliest").load().selectExpr("partition", "offset", "CAST(value AS STRING) AS v")
            .collect())
    return {(r.partition, r.offset): json.loads(r.v) for r in rows}


def dropped_by(checkpoint: Path, records: dict[tuple[int, int], dict[str, Any]], delay_ms: int) -> list[tuple]:
    """Plain Python: the records a stateless speed query whose micro-batches are those of ``checkpoint``'s
    offset log leaves out: event time before the largest event time of its earlier micro-batches minus the
    watermark delay (checked against the watermark each offset-log entry recorded). Sorted (event id,
    sensor, event ms, window start ms, lateness ms)."""
    from spark_jobs.io.lineage import committed_batches, offset_log_entry
    from spark_jobs.speed.session_late import initial_offsets

    start = {int(k): v for k, v in initial_offsets(checkpoint, TOPIC).items()}
    seen: int | None = None
    out: list[tuple] = []
    for n in committed_batches(checkpoint):
        meta, end = offset_log_entry(checkpoint, n)
        wm = None if seen is None else seen - delay_ms
        assert int(meta["batchWatermarkMs"]) == (wm or 0), (n, meta, wm)
        ends = {int(k): int(v) for k, v in end[TOPIC].items()}
        batch = [e for (part, off), e in records.items() if start.get(part, 0) <= off < ends[part]]
        if wm is not None:
            out += [(e["event_id"], e["sensor_id"], e["timestamp"], e["timestamp"] // MINUTE * MINUTE, wm - e["timestamp"])
                    for e in batch if e["timestamp"] < wm]
        seen = max([seen or 0, *(e["timestamp"] for e in batch)])
        start = ends
    return sorted(out)


def test_replay_keeps_the_late_rows_its_own_micro_batches_dropped(spark: SparkSession, stack: TidewaterConfig) -> None:
    """Events far behind every watermark reach the log; ``replay`` (small micro-batches, so that they are
    not in its first) builds the next version: its ``late.<p>`` rows are exactly what a plain-Python
    oracle says that version's micro-batches dropped, and the ledger's transform links each window the
    batch layer would correct to its late rows, and no other (run after the test above: under Asia/Kolkata)."""
    from lakehouse import naming
    from lakehouse.pipeline import load_pipeline
    from lakehouse.speed_versions import active_version
    from spark_jobs.batch import bronze as batch_bronze
    from spark_jobs.io.lineage import query_id
    from spark_jobs.replay import job as replay
    from spark_jobs.shared.serving_view import refresh_view
    from spark_jobs.speed.control import stop_speed, wait_caught_up
    from spark_jobs.transforms import incremental
    from spark_jobs.transforms.reconcile import ledger_rows
    from spark_jobs.transforms.windows import dedup_history

    cfg = stack
    p = load_pipeline(PIPELINE, cfg.pipelines)
    before = active_version(cfg, PIPELINE)
    first = min(e["timestamp"] for e in kafka_records(spark, cfg).values())
    late = [event(f"late{s}{j}", s, first + 31_000 + j * 10_000, 99.0) for s in ("k-a", "k-b", "k-c") for j in range(4)]
    send(cfg, TOPIC, encode(late))
    records = kafka_records(spark, cfg)
    os.environ["TIDEWATER_MAX_OFFSETS_PER_TRIGGER"] = "300"  # the replay's micro-batches (its job inherits it)
    try:
        out = replay.replay(cfg, p, refresh=lambda v: refresh_view(spark, cfg, p, speed_version=v), timeout=900)
        version = out.to_version
        assert version == before + 1 and active_version(cfg, PIPELINE) == version
        assert wait_caught_up(cfg, p, version=version, timeout=300)  # kappa: the main job now runs it
    finally:
        os.environ.pop("TIDEWATER_MAX_OFFSETS_PER_TRIGGER", None)
        stop_speed(cfg, p)
    replayed = naming.checkpoint_dir(cfg, PIPELINE, "speed", version)
    want = dropped_by(replayed, records, p.watermark_seconds * 1000)
    # every event sent behind is dropped; so are events of a partition the small micro-batches read behind
    # the others (its events fall behind the watermark the other partitions moved): the oracle has those too
    assert {e["event_id"] for e in late} <= {e[0] for e in want}
    kept = [r for r in late_rows(spark, "late.sensor_readings") if r.speed_version == version]
    assert sorted((r.event_id, r.sensor_id, r.ts, r.ws, r.lateness_ms) for r in kept) == want
    assert {r.lineage for r in kept} == {query_id(replayed)}

    # the ledger (its transform: kappa mode has no batch runs) links each window the batch layer's
    # computation over bronze differs in to its late rows
    _v, snapshot = batch_bronze.bronze_snapshot(spark, cfg, p)
    far_future = snapshot.selectExpr("max(event_time) + INTERVAL 1 DAY").collect()[0][0]
    batch_rows = incremental.all_windows(p, snapshot.transform(dedup_history(p)), far_future)
    late_table = spark.table("late.sensor_readings").where(f"speed_version = {version}")
    ledger = ledger_rows(p, batch_rows, spark.table(naming.speed_table(PIPELINE, version)), snapshot,
                         spark.table(naming.table("quarantine", PIPELINE)), late_table).where("aggregate = 'event_count'")
    linked = {(r.window_key, r.ws): (r.late_rows, r.exact) for r in ledger.selectExpr(
        "*", "unix_millis(window_start) AS ws").collect()}
    per_window: dict[tuple[str, int], int] = {}
    for e in want:
        key = (f'{{"sensor_id":"{e[1]}"}}', e[3])
        per_window[key] = per_window.get(key, 0) + 1
    assert {k: n for k, (n, _) in linked.items() if n} == per_window
    assert {k for k, (_, exact) in linked.items() if not exact} == set(per_window)


def test_up_after_switching_to_lambda_restarts_speed_and_redefines_serving(spark: SparkSession,
                                                                          stack: TidewaterConfig) -> None:
    """The other direction of the one switch, as ``tidewater up`` applies it (``mode_switch.apply_mode``):
    the speed job started in Kappa mode is restarted in Lambda mode (its bronze log retention depends on
    it), and ``serving.<p>`` goes from the speed table alone to batch + speed."""
    from lakehouse.config import load_config
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.shared.serving_view import view_text
    from spark_jobs.speed.control import speed_process, start_speed, stop_speed
    from tidewater.commands.mode_switch import apply_mode, previous_mode

    kappa = stack
    p = load_pipeline(PIPELINE, kappa.pipelines)
    ensure_topic(kappa, TOPIC)  # as 'up' does (the module's first test created it already)
    apply_mode(kappa)  # an 'up' in kappa mode: records the mode, changes nothing
    assert previous_mode(kappa) == "kappa"
    start_speed(kappa, p, wait=300)
    before = speed_process(kappa, p).pid()
    assert "'batch' AS source" not in view_text(spark, "serving.sensor_readings")
    os.environ["TIDEWATER_MODE"] = "lambda"  # tidewater.yml edited, or the variable changed, then 'up'
    try:
        lam = load_config()
        apply_mode(lam)
        after = speed_process(lam, p).pid()
        assert after and after != before
        environ = Path(f"/proc/{after}/environ").read_bytes().decode().split("\0")
        given = dict(v.split("=", 1) for v in environ if "=" in v)
        assert given.get("TIDEWATER_MODE") == "lambda"
        assert previous_mode(lam) == "lambda"
        spark.catalog.refreshTable("serving.sensor_readings")
        assert "'batch' AS source" in view_text(spark, "serving.sensor_readings")
        apply_mode(lam)  # the next 'up' in the same mode restarts nothing
        assert speed_process(lam, p).pid() == after
    finally:
        stop_speed(stack, p)
        os.environ["TIDEWATER_MODE"] = "kappa"
