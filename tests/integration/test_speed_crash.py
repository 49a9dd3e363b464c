"""Exactly once, proven: SIGKILL the speed job (Python driver and JVM together) at random moments
while events keep flowing (a few of them 10 minutes late), restart it each time, stop and start it
gracefully once, then check every table against what was really sent, ``late.<p>`` included, and the
alerts: ``alerts.<p>`` each once and equal to the plain-Python oracle, the topic ``<topic>.alerts`` holding
every alert id (a duplicate only byte-for-byte equal: at least once, deduplicated by key).

The producer and the check are tests/integration/exactly_once.py's (shared with the broker-failure
tests in test_kafka_cluster.py).
"""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from benchmarks.alerts_oracle import expected_alerts
from tests.integration.alert_checks import assert_topic_holds, table_alerts, wait_alerts_caught_up
from tests.integration.exactly_once import LATE_PREFIX, PIPELINE, TOPIC, EventProducer, assert_exactly_once
from tests.integration.speed_helpers import late_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from infra.services.process import ManagedProcess
    from lakehouse.config import TidewaterConfig
    from lakehouse.pipeline import Pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]
HOST_TZ = "America/Los_Angeles"  # west of UTC: see the host_time_zone fixture

KILLS = 2


def test_sigkill_restarts_and_graceful_restart_keep_every_event_exactly_once(spark: SparkSession, stack: TidewaterConfig) -> None:
    import shutil

    from lakehouse import naming
    from lakehouse.naming import checkpoint_dir, jvm_scratch_dir
    from lakehouse.pipeline import load_pipeline
    from lakehouse.progress_records import StreamProgress
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.io.lineage import committed_batches, last_committed_offsets, query_id, saved_floors_path
    from spark_jobs.io.ops_reader import read_rows
    from spark_jobs.speed.control import (
        speed_process,
        speed_status,
        start_speed,
        stop_speed,
        topic_offsets,
        wait_caught_up,
    )

    cfg = stack
    p = load_pipeline(PIPELINE, cfg.pipelines)
    ensure_topic(cfg, TOPIC)
    rng = random.Random(7)
    producer = EventProducer(cfg, late_every=33)  # and a few events 10 minutes late
    producer.start()
    trials: list[str] = []
    killed: list[Path] = []

    def kill_9(proc: ManagedProcess) -> None:
        """SIGKILL to the whole process group (driver and JVM); the driver's Spark scratch files are
        under the data folder, not in /tmp (``infra.jvm_scratch``)."""
        killed.append(jvm_scratch_dir(cfg) / f"pid-{proc.pid()}")
        assert {"blockmgr", "spark"} <= {f.name.split("-")[0] for f in killed[-1].iterdir()}, killed[-1]
        assert proc.stop(timeout=0, sig=signal.SIGKILL)

    try:
        start_speed(cfg, p, wait=300)
        for trial in range(KILLS):
            delay = rng.uniform(4.0, 20.0)  # a random moment: mid-batch, mid-commit or idle
            time.sleep(delay)
            proc = speed_process(cfg, p)
            assert proc.running(), f"speed job died on its own before kill {trial + 1}:\n{proc.tail(30)}"
            kill_9(proc)
            trials.append(f"kill -9 after {delay:.1f}s with {len(producer.valid)} valid records sent")
            start_speed(cfg, p, wait=300)
        time.sleep(rng.uniform(4.0, 12.0))
        assert stop_speed(cfg, p), "graceful stop found no running job"
        trials.append(f"graceful stop/start with {len(producer.valid)} valid records sent")
        time.sleep(5)  # events keep arriving while the job is down
        start_speed(cfg, p, wait=300)
        time.sleep(10)
        # the usual response to a failOnDataLoss stop: delete the checkpoint. A new lineage must
        # neither skip (same txnAppId) nor double (re-read from earliest) a single record
        proc = speed_process(cfg, p)
        assert proc.running(), f"speed job died on its own after the graceful restart:\n{proc.tail(60)}"
        kill_9(proc)
        old = checkpoint_dir(cfg, PIPELINE, "stream", 1)
        old_lineage = (query_id(old), committed_batches(old))
        shutil.rmtree(old)
        old.with_name(f"{old.name}.floors.json").unlink()
        trials.append(f"kill -9 and checkpoint deleted with {len(producer.valid)} valid records sent")
        start_speed(cfg, p, wait=300)
        assert not [f for f in killed if f.exists()], "a new driver removes the scratch files of killed ones"
        # the new lineage warmed up on the topic's records too (a failing warm-up is only logged)
        warm = [line for line in speed_process(cfg, p).tail(5000).splitlines() if line.startswith("stream: warm-up")]
        assert warm and len(warm[-1].split(",")) == cfg.spark.warm_up_plan_rounds + cfg.spark.warm_up_record_rounds, warm
        time.sleep(8)
    finally:
        producer.finish()
    try:
        caught_up = wait_caught_up(cfg, p, timeout=600)
        assert caught_up, (f"speed job did not catch up after the last restart; trials {trials}; lag "
                           f"{speed_status(cfg, p).get('lag')}; log:\n{speed_process(cfg, p).tail(60)}")
        alerts_watermark = wait_alerts_caught_up(cfg, p, timeout=600)
    finally:
        stop_speed(cfg, p)
    print("\ncrash trials: " + "; ".join(trials))

    # late.<p>: each late record once (one window each), across every kill -9, restart and new lineage
    kept = late_rows(spark, "late.sensor_readings")
    positions = [(r.kafka_partition, r.kafka_offset) for r in kept]
    assert kept and len(positions) == len(set(positions)), "every late record in late.<p> exactly once"
    assert all(r.event_id.startswith(LATE_PREFIX) for r in kept), "only the events sent 10 minutes late"
    assert all(r.lateness_ms == r.wm - r.ts > 0 and r.ws <= r.ts < r.we == r.ws + 60_000 for r in kept)
    # every offset once in bronze or quarantine; speed = the oracle over every event sent except those
    # late.<p> holds: a late event is either counted by the speed layer or kept there, never both or neither
    assert_exactly_once(spark, cfg, producer, left_out={r.event_id for r in kept})

    assert_alerts_once(spark, cfg, p, producer, alerts_watermark)

    # the platform's own facts are exactly once too: one ops.stream_progress row per committed
    # micro-batch of each query lineage, across every kill -9 and restart (none missing, none twice)
    progress = [r for r in read_rows(cfg, "ops.stream_progress") if r["pipeline"] == PIPELINE]
    new = checkpoint_dir(cfg, PIPELINE, "stream", 1)
    lineages = [old_lineage, (query_id(new), committed_batches(new))]  # one query, both roles
    print(f"committed micro-batches per lineage: {lineages}")
    assert lineages[0][0] != lineages[1][0]
    for qid, committed in lineages:
        # the deleted lineage may also have written the rows of the micro-batch the kill interrupted
        # after its writes and before its commit (never committed there, so never re-run)
        interrupted = committed[-1] + 1 if committed else 0
        allowed = [committed, [*committed, interrupted]] if qid == lineages[0][0] else [committed]
        for query in ("ingest", "speed"):
            ids = sorted(r["batch_id"] for r in progress if r["query"] == query and r["run_id"] == qid)
            assert ids in allowed, f"{query} of lineage {qid}: {ids} vs committed {committed}"
    # the alerts query's one lineage (never deleted): one row per committed micro-batch, the last at its offsets
    alerts_checkpoint = naming.alerts_checkpoint(cfg, PIPELINE)
    rows = sorted((r for r in progress if r["query"] == "alerts"), key=lambda r: r["batch_id"])
    assert [r["batch_id"] for r in rows] == committed_batches(alerts_checkpoint)
    assert topic_offsets(StreamProgress.from_row(rows[-1]), TOPIC) == last_committed_offsets(alerts_checkpoint, TOPIC)
    # the late rows are the ones counted, micro-batch by micro-batch, of the lineages whose rows stand: the
    # new lineage reads again, under a watermark of its own, what the deleted one read from its speed floors
    # on (every offset when it recomputes the speed table from the start), so the deleted lineage's
    # micro-batch the kill cut short, or all of its micro-batches, are counted but no longer kept
    old_qid, old_committed = lineages[0]
    cut_short = (str(old_qid), old_committed[-1] + 1 if old_committed else 0)
    recomputed = json.loads(saved_floors_path(new).read_text()).get("speed") is None
    dropped = {(r["run_id"], r["batch_id"]): r["rows_dropped_by_watermark"] for r in progress
               if r["query"] == "speed" and r["rows_dropped_by_watermark"] and r["run_id"] != "recovered"
               and not (recomputed and r["run_id"] == old_qid)}
    per_batch: dict[tuple[str, int], int] = {}
    for r in kept:
        per_batch[(r.lineage, r.batch_id)] = per_batch.get((r.lineage, r.batch_id), 0) + 1
    for counts in (dropped, per_batch):
        counts.pop(cut_short, 0)
    assert per_batch == dropped, f"late rows per micro-batch {per_batch} vs counted {dropped}"


def test_progress_rows_left_pending_by_a_kill_are_written_once_at_the_next_start(spark: SparkSession,
                                                                                 stack: TidewaterConfig) -> None:
    """A micro-batch's ops.stream_progress rows are committed beside the next micro-batch; a kill -9
    can leave them pending (file saved, append not committed) or committed with the file not yet
    deleted. The next start must write the first exactly once and not double the second."""
    from datetime import UTC, datetime

    from lakehouse import contracts, naming
    from lakehouse.progress_records import StreamProgress
    from spark_jobs.io.ops_reader import read_rows
    from spark_jobs.speed.stream_progress_rows import ProgressRows, drain, encode, pending_dir

    contracts.ensure(spark, contracts.STREAM_PROGRESS)
    checkpoint = naming.checkpoint_dir(stack, "pending_rows_check", "stream", 1)
    lineage = "lineage-pending-check"

    def rows_of(batch_id: int) -> list[StreamProgress]:
        now = datetime.now(UTC)
        return [StreamProgress.from_row({"pipeline": "pending_rows_check", "query": q, "query_version": 1, "run_id": lineage,
                 "batch_id": batch_id, "batch_time": now, "input_rows": 10, "input_rows_per_second": None,
                 "processed_rows_per_second": 5.0, "batch_duration_ms": 2000, "watermark": None, "state_rows": 0,
                 "rows_dropped_by_watermark": 1 if q == "speed" else None, "end_offsets": "{}",
                 "latest_offsets": None, "recorded_at": now}) for q in ("ingest", "speed")]

    def stored() -> list[tuple[str, int, object]]:
        return sorted((r["query"], r["batch_id"], r["rows_dropped_by_watermark"])
                      for r in read_rows(stack, "ops.stream_progress") if r["pipeline"] == "pending_rows_check")

    writer = ProgressRows(spark, checkpoint)
    writer.submit(f"{lineage}/0", 0, rows_of(0))  # the normal path: appended by a thread, file removed
    drain()
    assert stored() == [("ingest", 0, None), ("speed", 0, 1)]
    folder = pending_dir(checkpoint)
    assert not list(folder.glob("*.json"))

    (folder / f"{1:020d}.json").write_text(encode(f"{lineage}/1", rows_of(1)))  # killed before the append
    (folder / f"{0:020d}.json").write_text(encode(f"{lineage}/0", rows_of(0)))  # killed after it, before the delete
    assert ProgressRows(spark, checkpoint).recover() == 1
    assert ProgressRows(spark, checkpoint).recover() == 0
    assert not list(folder.glob("*.json"))
    assert stored() == [("ingest", 0, None), ("ingest", 1, None), ("speed", 0, 1), ("speed", 1, 1)]


def test_a_compaction_beside_the_next_blocks_appends_commits_and_loses_nothing(spark: SparkSession) -> None:
    """The stream compacts a block of micro-batches' partials on a thread of its own while the next
    block appends to the other ``slot`` partition. Both must commit (Delta checks by partition; on an
    unpartitioned table the compaction fails with ConcurrentAppendException), at least one append
    must commit INSIDE the compaction's transaction (or this test proved nothing), and the speed view
    must still count every event once."""
    from datetime import UTC, datetime, timedelta

    from pyspark.sql import functions as F

    from lakehouse import contracts
    from lakehouse.pipeline import load_pipeline
    from lakehouse.speed_fold import COMPACT_EVERY, slot_of
    from spark_jobs.speed import partials_table
    from spark_jobs.transforms.partials import partial_aggregate

    p, version = load_pipeline("sensor_readings"), 7
    contracts.ensure(spark, contracts.speed(p, version))
    table = contracts.speed_partials(p, version).name
    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def append(batch_id: int) -> None:  # 20 events, 2 sensors, spread over 3 one-minute windows
        events = spark.createDataFrame(
            [(f"b{batch_id}-e{i}", f"s-{i % 2}", t0 + timedelta(seconds=batch_id * 2 + i * 7), 20.0 + i) for i in range(20)],
            f"{p.event_id} string, sensor_id string, event_time timestamp, temperature double")
        partials_table.append(events.transform(partial_aggregate(p)), p, version, "q", batch_id, t0)

    for batch_id in range(COMPACT_EVERY):
        append(batch_id)
    runs = partials_table.compactions(table)
    runs.start(partials_table.compact, spark, p, table, slot_of(COMPACT_EVERY - 1), COMPACT_EVERY - 1)
    batch_id = COMPACT_EVERY
    while runs.busy() or batch_id < COMPACT_EVERY + 3:  # the next block appends while it runs
        append(batch_id)
        batch_id += 1
    runs.drain()  # raises if the compaction failed

    history = spark.sql(f"DESCRIBE HISTORY {table}").collect()
    compaction = [h for h in history if h.operationParameters.get("mode") == "Overwrite"]
    assert len(compaction) == 1, [(h.version, h.operation, h.operationParameters) for h in history]
    read, wrote = compaction[0].readVersion, compaction[0].version
    assert any(read < h.version < wrote for h in history if h.operation == "WRITE" and h.version != wrote), \
        "no append committed while the compaction ran: the test did not exercise the overlap"
    left = spark.table(table).where(f"NOT compacted AND batch_id < {COMPACT_EVERY}").count()
    assert left == 0, f"{left} uncompacted rows of the compacted block remain"
    assert spark.table(table).where(f"batch_id >= {COMPACT_EVERY} AND compacted").count() == 0
    view = spark.table(contracts.speed(p, version).name)
    assert view.agg(F.sum("event_count")).collect()[0][0] == 20 * batch_id  # every event once


def assert_alerts_once(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, producer: EventProducer,
                       watermark_ms: int) -> None:
    """``alerts.<p>`` equal to the oracle over the events the alerts query accepted, each alert once; the topic
    holds every one. Accepted: every on-time event, and the late ones of its first micro-batch (no watermark
    yet there; its checkpoint was never deleted, so every later one ran under a watermark that drops them)."""
    from lakehouse import naming
    from spark_jobs.io.lineage import batch_end_offsets

    first = batch_end_offsets(naming.alerts_checkpoint(cfg, p.name), 0, TOPIC)
    spark.catalog.refreshTable("bronze.sensor_readings")
    in_first = {r.event_id for r in spark.table("bronze.sensor_readings").select(
        "event_id", "kafka_partition", "kafka_offset").collect() if r.kafka_offset < first.get(str(r.kafka_partition), 0)}
    accepted = {e["event_id"]: e for e in producer.valid
                if not e["event_id"].startswith(LATE_PREFIX) or e["event_id"] in in_first}
    expected = expected_alerts(p, list(accepted.values()), watermark_ms)
    assert {"hot_then_cold", "overheating"} <= {a[1] for a in expected}, "the events fire the sequence and threshold"
    stored = table_alerts(spark, naming.table("alerts", p.name))
    assert len(stored) == len({a[0] for a in stored}), "every alert once in alerts.<p>"
    assert set(stored) == expected
    assert_topic_holds(cfg, naming.alerts_topic(TOPIC), expected)
    print(f"alerts: {len(stored)} in alerts.{p.name} and its topic, equal to the oracle")
