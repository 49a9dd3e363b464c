"""Incremental batch runs give exactly the table a full run gives, after late and duplicate data.

Bronze is written as the ingest query writes it (Delta appends with Kafka coordinates, Change
Data Feed on); the batch layer then runs for real on Spark + Delta + the shared metastore. The
final tables are also checked against an exact answer computed in plain Python.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from lakehouse import contracts, naming
from lakehouse.pipeline import load_pipeline
from lakehouse.run_records import BatchRun

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig
    from lakehouse.pipeline import Pipeline

pytestmark = pytest.mark.integration
HOST_TZ = "America/Los_Angeles"  # west of UTC: see the host_time_zone fixture

T0 = datetime(2026, 3, 1, 12, 0, 0)


class Bronze:
    """Appends events to bronze.<p> with increasing Kafka offsets (duplicates get new offsets)."""

    def __init__(self, spark: SparkSession, p: Pipeline) -> None:
        self.spark, self.p, self.offset = spark, p, 0
        contracts.ensure(spark, contracts.bronze(p))

    def append(self, events: list[dict]) -> None:
        cols = contracts.bronze(self.p).columns
        rows = []
        for e in events:
            self.offset += 1
            et = T0 + timedelta(milliseconds=e[self.p.event_time])
            arrived = T0 + timedelta(milliseconds=e.get("_arrived_ms", e[self.p.event_time]))
            meta = {"event_time": et, "kafka_topic": self.p.topic, "kafka_partition": 0, "kafka_offset": self.offset,
                    "kafka_timestamp": arrived, "ingest_time": arrived, "event_date": et.date()}
            rows.append(tuple({**e, **meta}.get(c) for c, _ in cols))
        schema = ", ".join(f"`{c}` {t}" for c, t in cols)
        self.spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(
            naming.table("bronze", self.p.name))


def table_rows(spark: SparkSession, p: Pipeline) -> dict:
    aggs = [a.name for a in p.aggregates]
    rows = spark.table(naming.table("batch", p.name)).collect()
    return {tuple(r[c] for c in p.grain): tuple(round(r[a], 9) if isinstance(r[a], float) else r[a] for a in aggs)
            for r in rows}


def overwrite_version(spark: SparkSession, after: int) -> int:
    """The version of the first overwrite (a full run's publish) of batch.sensor_readings after ``after``."""
    history = spark.sql("DESCRIBE HISTORY batch.sensor_readings").collect()
    return min(h["version"] for h in history if h["version"] > after and h["operation"] == "WRITE")


def sensor(i: int, sid: str, ms: int, temp: float) -> dict:
    return {"event_id": f"r{i}", "sensor_id": sid, "timestamp": ms, "temperature": temp}


def copies_per_window(events: list[dict]) -> dict:
    """(window_key, window_start) -> bronze rows minus distinct event ids in that window."""
    rows: dict = defaultdict(list)
    for e in events:
        rows[(f'{{"sensor_id":"{e["sensor_id"]}"}}', T0 + timedelta(minutes=e["timestamp"] // 60_000))].append(e["event_id"])
    return {k: len(ids) - len(set(ids)) for k, ids in rows.items()}


def first_copies(events: list[dict]) -> list[dict]:
    """One event per id: the first copy to arrive (then the lower offset: the earlier append) wins."""
    by_id: dict = {}
    for e in sorted(events, key=lambda e: e.get("_arrived_ms", e["timestamp"])):
        by_id.setdefault(e["event_id"], e)
    return list(by_id.values())


def exact_sensor_windows(events: list[dict], cutoff: datetime) -> dict:
    groups: dict = defaultdict(list)
    for e in first_copies(events):
        start = T0 + timedelta(minutes=e["timestamp"] // 60_000)
        groups[(e["sensor_id"], start, start + timedelta(minutes=1))].append(e["temperature"])
    return {k: (len(v), round(sum(v) / len(v), 9), min(v), max(v)) for k, v in groups.items() if k[2] <= cutoff}


def cached_frames(spark: SparkSession) -> int:
    """Cached RDDs other than Delta's snapshot states (Delta caches the state of each table version it
    reads, as "Delta Table State #<version> - <path>", and drops old ones when it likes)."""
    rdds = spark.sparkContext._jsc.getPersistentRDDs().values()
    return sum(1 for rdd in rdds if not str(rdd.name() or "").startswith("Delta Table State"))


def staged_way(capfd: pytest.CaptureFixture[str]) -> str:
    """How the last run computed its windows: 'fold', 'recompute' or 'full' (its stage step line)."""
    lines = [x for x in capfd.readouterr().err.splitlines() if " stage: " in x]
    return lines[-1].split(" windows ")[0].rsplit(", ", 1)[-1]


def test_sensor_incremental_equals_full_and_exact(spark: SparkSession, cfg: TidewaterConfig,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.sql import functions as F

    from lakehouse.errors import NothingToDo
    from spark_jobs.batch import bronze as batch_bronze
    from spark_jobs.batch import wap as batch
    from spark_jobs.io import batch_runs

    p = load_pipeline("sensor_readings")
    bronze = Bronze(spark, p)
    sent: list[dict] = []

    def send(events: list[dict]) -> None:
        sent.extend(events)
        bronze.append(events)

    # the pipeline's first events, 20 s of them: no window is complete by the cutoff (2 minutes before the
    # latest), so the first run (full) publishes none; its overwrite of the empty table makes no Delta commit,
    # which the publish must not take for a lost write (a soak's first DAG run would fail on it)
    send([sensor(5000 + i, "s8", i * 5_000, 15.0) for i in range(5)])
    empty = batch.run(spark, cfg, p)
    assert (empty.mode, empty.status, empty.windows_written) == ("full", "published", 0)
    assert table_rows(spark, p) == {}
    send([sensor(i, f"s{i % 3}", i * 4_000, 20.0 + i % 7) for i in range(150)])  # 10 minutes
    first = batch.run(spark, cfg, p, full=True)
    assert first.mode == "full" and first.windows_written > 0
    # later data, late events into already-published windows, and re-sent duplicates
    late = [sensor(1000 + i, f"s{i % 3}", 30_000 + i * 60_000, -3.5 - i) for i in range(4)]
    send([sensor(i, f"s{i % 3}", i * 4_000, 20.0 + i % 7) for i in range(150, 240)] + late + sent[10:20])
    batch_bronze.require_bronze_change(cfg, p)  # the CLI's Spark-free check: bronze has a commit since `first`
    second = batch.run(spark, cfg, p)
    assert second.mode == "incremental"
    assert staged_way(capfd) == "fold"  # late events and re-sent copies fold into the published windows
    assert second.windows_written < len(table_rows(spark, p))
    # a copy of r100 (6:40) with another payload, arriving last, in a late window (1:30): the late
    # window is recomputed, and r100 must still count once, in 6:40, where its first copy is
    copy = {**sent[100], "timestamp": 90_500, "temperature": 77.0, "_arrived_ms": 3_600_000}
    # and a copy of r120 (8:00) that reached Kafka before the published one (another partition's
    # append, or a broker's clock): it displaces it, so 8:00 loses r120 and 0:30 gains it, which only
    # a recompute of both windows can express
    ahead = {**sent[120], "timestamp": 30_700, "temperature": 55.0, "_arrived_ms": 100_000}
    send([sensor(2000, "s1", 90_000, 39.0), sensor(2001, "s9", 60_500, 1.0), copy, ahead] + sent[:5])
    third = batch.run(spark, cfg, p)
    assert third.mode == "incremental" and third.windows_written >= 2
    assert staged_way(capfd) == "recompute"
    # the run's ledger rows count every copy in bronze against the distinct ids, window by window
    ledger = {(r["window_key"], r["window_start"]): r["duplicates_removed"] for r in spark.table(
        "ops.reconciliation").where(f"run_id = '{third.run_id}'").collect()}
    assert len(ledger) == third.windows_written
    assert ledger == {k: v for k, v in copies_per_window(sent).items() if k in ledger}
    assert any(ledger.values()), "the re-sent duplicates fall into some of the run's windows"
    # recording the run's ledger again (a retried reconcile task): its MERGE (narrowed to the run's own rows)
    # replaces them, and no earlier run's rows change
    from spark_jobs.batch.reconcile import record_ledger

    per_run = "SELECT run_id, count(*) AS n, sum(duplicates_removed) AS d FROM ops.reconciliation GROUP BY run_id"
    before = sorted(spark.sql(per_run).collect())
    assert record_ledger(spark, cfg, p, third.run_id) == third.windows_written
    assert sorted(spark.sql(per_run).collect()) == before and len(before) == 3
    with pytest.raises(NothingToDo, match="run 'no-such-run' of sensor_readings is not published"):
        record_ledger(spark, cfg, p, "no-such-run")  # checked against ops.batch_runs before any SQL

    incremental = table_rows(spark, p)
    assert incremental == exact_sensor_windows(sent, third.cutoff)
    # the run read bronze's row count, latest event time and latest arrival from the Delta log's file
    # statistics (no scan): the same facts a scan of that version finds
    from spark_jobs.io.delta_io import table_version

    version = table_version(spark, "bronze.sensor_readings")
    scanned = spark.sql("SELECT count(*) AS n, unix_millis(max(event_time)) AS top, unix_millis(max(kafka_timestamp)) AS arrived"
                        " FROM bronze.sensor_readings").collect()[0]
    from_log = batch_bronze.snapshot_stats(cfg, p, version)
    assert from_log is not None
    assert (from_log["n"], int(from_log["top"].timestamp() * 1000), int(from_log["arrived"].timestamp() * 1000)) == (
        scanned["n"], scanned["top"], scanned["arrived"])
    version_before_full = table_version(spark, naming.table("batch", p.name))
    full = batch.run(spark, cfg, p, full=True)
    assert full.mode == "full"
    assert table_rows(spark, p) == incremental
    # a full run replaces the table's rows in one commit; every row names the batch.<p> version that
    # published it (numbered before that commit), as the serving view shows it
    published = spark.table(naming.table("batch", p.name)).collect()
    batch_version = overwrite_version(spark, version_before_full)
    assert {r["as_of"] for r in published} == {
        f"batch.sensor_readings v{batch_version} (run {full.run_id}, bronze v{version})"}
    assert {r["finality"] for r in published} <= {"final", "corrected"} and len(published) == len(incremental)
    again = batch.run(spark, cfg, p)  # nothing new: same table
    assert again.windows_written == 0 and table_rows(spark, p) == incremental
    # so the CLI (and the DAG's stage task) ends such a run before Spark: exit 3, one line naming the run
    with pytest.raises(NothingToDo, match=f"is still at v{version}, which run {again.run_id} published;"):
        batch_bronze.require_bronze_change(cfg, p)
    # two runs staged in turn (the DAG's stage task, then a manual one): only the later one can publish
    older, newer = batch.stage(spark, cfg, p), batch.stage(spark, cfg, p)
    with pytest.raises(NothingToDo) as err:  # not a failure (exit 3): the DAG's publish task is skipped
        batch.publish(spark, cfg, p, older.run_id)
    assert str(err.value) == (f"batch: run {older.run_id} of sensor_readings was superseded by run "
                              f"{newer.run_id} (staged), staged after it; nothing to publish")
    batch.audit(spark, cfg, p, build_docs=False)  # the DAG's validate task: the newer run's rows pass
    assert batch.publish(spark, cfg, p, newer.run_id).status == "published"
    with pytest.raises(NothingToDo, match=f"superseded by run {newer.run_id} \\(published\\), staged after it;"):
        batch.publish(spark, cfg, p, older.run_id)
    statuses = {r.run_id: r.status for r in batch_runs.runs(spark, p.name)}
    # the runs as read from the table's log and files are the runs Spark reads, value for value
    by_spark = batch_runs.current_runs([r.asDict() for r in spark.table("ops.batch_runs").collect()
                                        if r["pipeline"] == p.name])
    assert batch_runs.runs(spark, p.name) == [BatchRun.from_row(r) for r in by_spark]
    assert len(by_spark) == len(statuses) >= 7
    assert batch_runs.rows_from_log(spark) is not None  # read so, not by the Spark fallback
    assert all(statuses[r.run_id] == "published" for r in (first, second, third, full, again, newer))
    assert statuses[older.run_id] == "superseded"
    # the run log: one row per run and status it reached, appended
    logged = {r["run_id"]: tuple(r["s"]) for r in spark.table("ops.batch_runs").groupBy("run_id").agg(
        F.sort_array(F.collect_list("status")).alias("s")).collect()}
    assert {logged[r.run_id] for r in (first, second, third, full, again)} == {("published", "staged")}
    assert logged[newer.run_id] == ("published", "staged", "validated")
    assert logged[older.run_id] == ("staged", "superseded")


def play(i: int, user: str, minute: float, points: int) -> dict:
    return {"event_id": f"g{i}", "user_id": user, "timestamp": int(minute * 60_000), "action": "move", "points": points}


def exact_sessions(events: list[dict], gap_ms: int, cutoff: datetime) -> dict:
    by_user: dict = defaultdict(list)
    for e in {e["event_id"]: e for e in events}.values():
        by_user[e["user_id"]].append(e)
    out = {}
    for user, evs in by_user.items():
        evs.sort(key=lambda e: e["timestamp"])
        session: list[dict] = []
        for e in [*evs, None]:
            if session and (e is None or e["timestamp"] >= session[-1]["timestamp"] + gap_ms):
                lo, hi = session[0]["timestamp"], session[-1]["timestamp"]
                key = (user, T0 + timedelta(milliseconds=lo), T0 + timedelta(milliseconds=hi + gap_ms))
                if key[2] <= cutoff:
                    out[key] = (len(session), sum(x["points"] for x in session), lo, hi)
                session = []
            if e is not None:
                session.append(e)
    return out


def test_sessions_incremental_equals_full_after_merging_late_event(spark: SparkSession, cfg: TidewaterConfig) -> None:
    from spark_jobs.batch import wap as batch

    p = load_pipeline("game_sessions")
    bronze = Bronze(spark, p)
    sent: list[dict] = []

    def send(events: list[dict]) -> None:
        sent.extend(events)
        bronze.append(events)

    # u1: sessions [0..2] and [8..9] minutes (6 minutes apart > 5-minute gap); u2 plays on to minute 40
    first_batch = [play(1, "u1", 0, 5), play(2, "u1", 2, 7), play(3, "u1", 8, 1), play(4, "u1", 9, 2)]
    first_batch += [play(10 + i, "u2", i * 2, 3) for i in range(21)] + [play(40 + i, "u3", 3 + i, 1) for i in range(3)]
    send(first_batch)
    first = batch.run(spark, cfg, p)
    sessions_u1 = [k for k in table_rows(spark, p) if k[0] == "u1"]
    assert len(sessions_u1) == 2
    # a late u1 event at minute 5 merges both sessions; a duplicate; u2 keeps playing
    send([play(5, "u1", 5, 100), first_batch[0]] + [play(100 + i, "u2", 42 + i * 2, 3) for i in range(5)])
    second = batch.run(spark, cfg, p)
    assert second.mode == "incremental" and second.windows_deleted >= 1
    # a late event for u3 right after its session, and a new user
    send([play(6, "u3", 7.5, 50), play(7, "u4", 1, 9)])
    third = batch.run(spark, cfg, p)
    incremental = table_rows(spark, p)
    assert [k for k in incremental if k[0] == "u1"] == [("u1", T0, T0 + timedelta(minutes=14))]
    assert incremental == exact_sessions(sent, 5 * 60_000, third.cutoff)
    batch.run(spark, cfg, p, full=True)
    assert table_rows(spark, p) == incremental
    assert first.mode == "full"


def ride(i: int, lift: str, minute: float, skier: str, arrived_minute: float | None = None) -> dict:
    event = {"event_id": f"l{i}", "lift_id": lift, "skier_id": skier, "timestamp": int(minute * 60_000)}
    return event if arrived_minute is None else {**event, "_arrived_ms": int(arrived_minute * 60_000)}


def exact_sliding_windows(events: list[dict], size_min: int, slide_min: int, cutoff: datetime) -> dict:
    """(lift_id, start, end) -> (rides, distinct skiers) of the first copy of each id, windows ending by ``cutoff``."""
    groups: dict = defaultdict(list)
    for e in first_copies(events):
        last_start = e["timestamp"] // (slide_min * 60_000) * slide_min
        for start_min in range(last_start - size_min + slide_min, last_start + 1, slide_min):
            start = T0 + timedelta(minutes=start_min)
            groups[(e["lift_id"], start, start + timedelta(minutes=size_min))].append(e["skier_id"])
    return {k: (len(v), len(set(v))) for k, v in groups.items() if k[2] <= cutoff}


def test_sliding_incremental_equals_full_at_and_across_the_cutoff(spark: SparkSession, cfg: TidewaterConfig,
                                                                 capfd: pytest.CaptureFixture[str]) -> None:
    """lift_rides (10-minute windows sliding every 5, watermark 5 minutes; an exact distinct count, so an
    incremental run recomputes the touched windows rather than folding). Late events fall in published
    windows, in the window that completes exactly at the new cutoff and in one still open; a later copy of
    an id with another skier loses to the first; then the cutoff moves within a slide (no window completes).
    After each incremental run the table equals a hand computation, and a full run changes nothing. Last,
    VACUUM deletes the changes an incremental run would read: the run falls back to a full one."""
    from spark_jobs.batch import wap as batch

    p = load_pipeline("lift_rides")
    assert (p.window.type, p.window.size, p.window.slide) == ("sliding", "10 minutes", "5 minutes")
    bronze = Bronze(spark, p)
    sent: list[dict] = []

    def send(events: list[dict]) -> None:
        sent.extend(events)
        bronze.append(events)

    def check(run: BatchRun) -> dict:
        rows = table_rows(spark, p)
        assert rows == exact_sliding_windows(sent, 10, 5, run.cutoff), run
        return rows

    # minutes 0-30 on two lifts: the cutoff (latest - 5 minutes) is 12:25, so windows end by 12:25
    send([ride(i, f"L{i % 2}", i * 0.75, f"k{i % 7}") for i in range(41)])
    first = batch.run(spark, cfg, p)
    assert first.mode == "full" and first.cutoff == T0 + timedelta(minutes=25), first
    after_first = check(first)
    # late: 12:12 (windows 12:05-12:15 and 12:10-12:20, both published), 12:24.5 (12:15-12:25, published,
    # and 12:20-12:30, which completes exactly at the new cutoff 12:30), 12:29.9 (12:20-12:30 and the open
    # 12:25-12:35); l3 again with another skier, arriving later (its first copy wins); new rides to 12:35
    send([ride(100, "L0", 12, "late-a", 31), ride(101, "L1", 24.5, "late-b", 31), ride(102, "L1", 29.9, "late-c", 32),
          {**ride(3, "L1", 2.25, "impostor"), "_arrived_ms": 33 * 60_000}, ride(103, "L0", 35, "k1")])
    second = batch.run(spark, cfg, p)
    assert second.mode == "incremental" and second.cutoff == T0 + timedelta(minutes=30), second
    after_second = check(second)
    published = ("L0", T0 + timedelta(minutes=5), T0 + timedelta(minutes=15))
    assert after_second[published] == (after_first[published][0] + 1, after_first[published][1] + 1)  # late-a
    assert after_second[("L1", T0 + timedelta(minutes=20), T0 + timedelta(minutes=30))][1] >= 2  # late-b, late-c in it
    assert ("L1", T0 + timedelta(minutes=25), T0 + timedelta(minutes=35)) not in after_second  # still open
    # the cutoff moves within a slide (12:30 -> 12:32: no window completes); a late ride at 12:03
    send([ride(104, "L0", 3, "late-d", 36), ride(105, "L1", 37, "k2")])
    third = batch.run(spark, cfg, p)
    assert third.mode == "incremental" and third.cutoff == T0 + timedelta(minutes=32), third
    incremental = check(third)
    batch.run(spark, cfg, p, full=True)
    assert table_rows(spark, p) == incremental
    # new rides, then maintenance compacts bronze and VACUUM (retention 0 here; 168 h after a week without a
    # publish) deletes the files of the versions the next incremental run would read as changes (Change Data
    # Feed): the run says why in one line and recomputes every window instead of failing on every run
    send([ride(106, "L0", 38, "k3"), ride(107, "L1", 39.5, "late-e"), ride(108, "L0", 12.5, "late-f", 40)])
    compact_and_vacuum(spark, naming.table("bronze", p.name))
    capfd.readouterr()
    fourth = batch.run(spark, cfg, p)
    assert "cannot be read; recomputing every window (a full run)" in capfd.readouterr().out
    assert (fourth.mode, fourth.status) == ("full", "published"), fourth
    check(fourth)


def compact_and_vacuum(spark: SparkSession, table: str) -> None:
    """OPTIMIZE, then VACUUM with no retention (Delta's retention check off for this one statement)."""
    from spark_jobs.maintenance.job import vacuum_settings

    check = "spark.databricks.delta.retentionDurationCheck.enabled"
    spark.conf.set(check, "false")
    try:
        with vacuum_settings(spark):
            spark.sql(f"OPTIMIZE {table}").collect()
            spark.sql(f"VACUUM {table} RETAIN 0 HOURS").collect()
    finally:
        spark.conf.unset(check)


def test_two_batch_runs_at_once_both_publish_the_same_table(spark: SparkSession, cfg: TidewaterConfig) -> None:
    """A scheduled run and a manual one at the same moment: they queue on the batch lock, so
    neither publishes another's staging (a full run whose rows another run overwrote would delete
    every window of batch.<p>). Runs after the sensor test, over its bronze table."""
    import threading

    from spark_jobs.batch import wap as batch

    p = load_pipeline("sensor_readings")
    before = table_rows(spark, p)
    assert before, "the sensor test published windows first"
    results: list[object] = []

    def one_run() -> None:
        try:
            results.append(batch.run(spark, cfg, p, full=True))
        except Exception as exc:  # recorded and asserted below
            results.append(exc)

    threads = [threading.Thread(target=one_run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert len(results) == 2 and all(isinstance(r, BatchRun) for r in results), results
    runs = [r for r in results if isinstance(r, BatchRun)]  # all of them (asserted above)
    assert [r.status for r in runs] == ["published", "published"]
    assert [r.windows_written for r in runs] == [len(before)] * 2
    assert table_rows(spark, p) == before


def test_as_of_names_the_publishing_commit_when_another_commit_came_first(spark: SparkSession,
                                                                         cfg: TidewaterConfig) -> None:
    """A publish numbers its commit before making it (the rows carry the version in ``as_of``). When
    another commit lands in between (here a property change, as the maintenance DAG's commits can),
    the rows are relabelled with the version their commit really got. Runs after the sensor test."""
    from lakehouse.speed_versions import active_version
    from spark_jobs.batch import wap as batch
    from spark_jobs.batch.publish import BatchTables, merge_staged, settle_as_of
    from spark_jobs.io.delta_io import table_version
    from spark_jobs.shared.locks import batch_lock

    p = load_pipeline("sensor_readings")
    table = naming.table("batch", p.name)
    run = batch.stage(spark, cfg, p, full=True)
    with batch_lock(cfg, p.name):
        numbered = table_version(spark, table) + 1
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('tidewater.test.interleaved' = '{run.run_id}')")
        merge_staged(spark, cfg, p, run, BatchTables.of(p), naming.speed_table(p.name, active_version(cfg, p.name)),
                     numbered)
        written = settle_as_of(spark, cfg, contracts.batch(p), run.run_id, numbered)
    assert written == overwrite_version(spark, numbered - 1) == numbered + 1
    labels = {r["as_of"] for r in spark.table(table).collect()}
    assert labels == {f"{table} v{written} (run {run.run_id}, bronze v{run.bronze_version})"}, labels
    # and without an interleaved commit nothing is relabelled
    assert settle_as_of(spark, cfg, contracts.batch(p), run.run_id, written) == written
    assert {r["as_of"] for r in spark.table(table).collect()} == labels


def refused_by_the_cli(spark: SparkSession, cfg: TidewaterConfig, stored_as: Pipeline) -> None:
    """``tidewater speed start`` (a real CLI process) on a speed table that stores ``stored_as``'s definition
    while the YAML holds another: one line naming the change and the rebuild, exit 2, and no job spawned
    (the check reads the table's log before a JVM starts); ``speed status`` names the same line as its
    ``problem``. The table's own definition is put back after."""
    import json
    import subprocess
    import sys

    from lakehouse.errors import TidewaterError
    from lakehouse.speed_versions import active_version
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.shared.definition_guard import record

    p = load_pipeline(stored_as.name, cfg.pipelines)
    speed_table = contracts.storage_table(p, active_version(cfg, p.name))
    ensure_topic(cfg, p.topic)  # past the topic check, to the definition's
    record(spark, speed_table, stored_as)
    try:
        out = subprocess.run([sys.executable, "-m", "tidewater.cli", "speed", "start", p.name], capture_output=True,
                             text=True, timeout=120)
        status = subprocess.run([sys.executable, "-m", "tidewater.cli", "speed", "status", p.name, "--json"],
                                capture_output=True, text=True, timeout=120)
    finally:
        record(spark, speed_table, p)
    assert status.returncode == 1 and f"tidewater: {json.loads(status.stdout)['problem']}" == out.stderr.strip()
    assert out.returncode == TidewaterError.EXIT_CODE, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [
        f"tidewater: the definition of {p.name} changed since {speed_table} was computed (window.size: \"5 minutes\" "
        f"-> \"1 minute\"); its windows follow the old one, and new ones would be mixed in: rebuild the speed layer "
        f"under the new one with 'tidewater replay {p.name}' (the windows of version {active_version(cfg, p.name)} "
        "stay served until the switch), or restore the old definition"], out.stderr
    assert not list(naming.run_dir(cfg).glob("speed-*.pid")) and not list(naming.logs_dir(cfg).glob("speed-*"))


def test_a_changed_definition_is_never_mixed_into_old_windows(spark: SparkSession, cfg: TidewaterConfig,
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    """The YAML's window edited from 1 to 5 minutes: an incremental run and a speed start refuse, naming the
    change and the command that rebuilds; a full run rebuilds ``batch.<p>`` (schema too, when aggregates
    change, once the speed layer has them), and while the speed layer still holds the old windows ``serving.<p>`` shows it alone. Before,
    both sizes landed in one table and one view. Runs after the sensor test, over its bronze table."""
    import dataclasses

    from lakehouse.errors import TidewaterError
    from lakehouse.pipeline import Aggregate, Window
    from lakehouse.speed_versions import active_version, set_active_version
    from spark_jobs.batch import wap as batch
    from spark_jobs.io.delta_io import table_version
    from spark_jobs.shared.serving_view import view_text
    from spark_jobs.speed.queries import start_queries

    p = load_pipeline("sensor_readings")
    table, view = naming.table("batch", p.name), naming.table("serving", p.name)
    before = table_rows(spark, p)
    wider = dataclasses.replace(p, window=Window("tumbling", "5 minutes"))
    change = 'window.size: "1 minute" -> "5 minutes"'
    with pytest.raises(TidewaterError, match=f"{change}.*'tidewater batch sensor_readings --full'"):
        batch.run(spark, cfg, wider)
    with pytest.raises(TidewaterError, match=f"{change}.*'tidewater replay sensor_readings'"):
        start_queries(spark, cfg, wider, active_version(cfg, p.name), ["stream"])
    assert table_rows(spark, p) == before
    refused_by_the_cli(spark, cfg, wider)

    capfd.readouterr()
    batch.run(spark, cfg, wider, full=True)
    sizes = {r["len"] for r in spark.sql(f"SELECT window_end - window_start AS len FROM {table}").collect()}
    assert sizes == {timedelta(minutes=5)}
    wide = table_rows(spark, wider)
    last_end = max(grain[2] for grain in wide)  # the 5-minute windows complete by the cutoff hold the same events
    assert sum(counts[0] for counts in wide.values()) == sum(c[0] for g, c in before.items() if g[2] <= last_end)
    assert "shows the speed layer only" in capfd.readouterr().err
    assert "'batch' AS source" not in view_text(spark, view)
    batch.run(spark, cfg, wider)  # incremental again: the table now holds the new definition

    more = dataclasses.replace(p, aggregates=(*p.aggregates, Aggregate("total_temperature", "sum", "temperature")))
    with pytest.raises(TidewaterError, match="total_temperature.*'tidewater replay sensor_readings', then"):
        batch.run(spark, cfg, more, full=True)  # its rows' finality needs a speed table with its columns

    contracts.ensure(spark, contracts.speed(more, 2))  # as a replay leaves it: a speed version with its columns
    set_active_version(cfg, p.name, 2, previous=1)
    published = batch.run(spark, cfg, more, full=True)  # its staging suite does not check the new sum
    assert "total_temperature" in spark.table(table).columns  # the overwrite replaced the schema too
    as_of = {r["as_of"] for r in spark.table(table).select("as_of").distinct().collect()}
    assert as_of == {f"{table} v{table_version(spark, table) - 1} (run {published.run_id}, "
                     f"bronze v{published.bronze_version})"}, as_of  # the replacing commit; then the definition's
    set_active_version(cfg, p.name, 1, previous=2)

    batch.run(spark, cfg, p, full=True)  # the original definition, in full: as before, served with the speed layer
    assert table_rows(spark, p) == before and "total_temperature" not in spark.table(table).columns
    assert "'batch' AS source" in view_text(spark, view)
    batch.run(spark, cfg, p)


def test_table_properties_read_from_the_log_are_what_spark_lists(spark: SparkSession, cfg: TidewaterConfig) -> None:
    """``ops_reader.table_properties`` (how the definition checks read a stored definition, without Spark)
    gives the properties ``SHOW TBLPROPERTIES`` lists, through checkpoints (one every 2 commits here) and
    changes; a table that does not exist has none."""
    from spark_jobs.io.ops_reader import table_path, table_properties

    table = naming.table("batch", "properties_probe")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} (n BIGINT) USING delta TBLPROPERTIES ('delta.checkpointInterval' = '2', "
              "'tidewater.definition' = '{\"keys\":[\"a\"]}')")
    path = table_path(cfg, table)
    for step in range(5):
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('tidewater.step' = '{step}')")
        spark.sql(f"INSERT INTO {table} VALUES ({step})")
        listed = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
        from_log = table_properties(path)
        assert from_log["tidewater.step"] == str(step) and from_log["tidewater.definition"] == '{"keys":["a"]}'
        assert {k: listed.get(k) for k in from_log} == from_log
    spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('tidewater.definition')")
    assert "tidewater.definition" not in table_properties(path)
    assert list((path / "_delta_log").glob("*.checkpoint.parquet")), "no checkpoint: the test read none"
    spark.sql(f"DROP TABLE {table}")
    assert table_properties(path) == {}


def test_batch_tables_leave_compaction_to_maintenance(spark: SparkSession, cfg: TidewaterConfig) -> None:
    """No auto compaction on the commit path: after an incremental MERGE it rewrites every file the
    MERGE has marked, the whole table (3.2-4.2 s per run at 100M bronze events). Not in the batch tables'
    properties, and off over the property of a table made before (it is on here): no OPTIMIZE commit after its
    writes and MERGEs, which still mark the rows they replace with deletion vectors."""
    from pyspark.sql import functions as F

    from lakehouse.errors import TidewaterError
    from spark_jobs.io.delta_io import merge_changes
    from spark_jobs.io.ops_reader import live_files, table_path

    assert "delta.autoOptimize.autoCompact" not in dict(contracts.MERGED)
    table = "batch.compaction_probe"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} (k INT, v INT) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
              "'delta.autoOptimize.autoCompact' = 'true')")
    spark.range(0, 4000, numPartitions=4).selectExpr("CAST(id AS INT) AS k", "0 AS v").write.insertInto(table)
    path = table_path(cfg, table)
    assert sorted(map(str, live_files(path))) == sorted(f.removeprefix("file:") for f in spark.table(table).inputFiles())
    for i in range(2):
        changes = spark.range(i, 4000, 97).selectExpr("CAST(id AS INT) AS k", f"{i + 1} AS v")
        merge_changes(spark, changes.withColumn("op", F.lit("upsert")), table, ["k"], ["k", "v"])
    history = spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").collect()
    assert [r["operation"] for r in history] == ["CREATE TABLE", "WRITE", "MERGE", "MERGE"]
    assert int(history[-1]["operationMetrics"]["numTargetDeletionVectorsAdded"]) > 0
    assert spark.table(table).where("v = 2").count() == len(range(1, 4000, 97))
    with pytest.raises(TidewaterError, match="deletion vectors"):  # the Python log reader cannot apply them
        live_files(path)
    spark.sql(f"DROP TABLE {table}")


def test_a_fold_of_known_windows_merges_without_inserts_and_never_loses_one(spark: SparkSession,
                                                                           cfg: TidewaterConfig) -> None:
    """Late events into published windows stage ``op = 'update'`` rows, which publish MERGEs without an insert
    clause (0.7-0.9 s less per run at 100M bronze events). Should a window the run read be gone by
    then, the MERGE's metrics show an unmatched row and the run's rows are MERGEd again with the clause: the
    table stays exact."""
    import dataclasses

    from delta.tables import DeltaTable

    from spark_jobs.batch import publish as batch_publish
    from spark_jobs.batch import wap as batch
    from spark_jobs.io import batch_runs

    p = dataclasses.replace(load_pipeline("sensor_readings"), name="fold_probe")
    table, staging = naming.table("batch", p.name), naming.staging_table("batch", p.name)
    bronze = Bronze(spark, p)
    sent = [sensor(i, f"s{i % 2}", i * 4_000, 10.0 + i % 5) for i in range(150)]  # 10 minutes
    bronze.append(sent)
    def passed_gate(run: BatchRun) -> BatchRun:
        """fold_probe has no GX suite of its own: its runs get the passing verdict the gate would record."""
        batch_runs.save(spark, run.with_verdict(True, run.written_version()))
        return run

    full = passed_gate(batch.stage(spark, cfg, p, full=True))
    batch.publish(spark, cfg, p, full.run_id)

    def late_round(first_id: int) -> BatchRun:
        late = [sensor(first_id + i, f"s{i % 2}", 60_000 + i * 61_000, -1.0 - i) for i in range(3)]  # 1:00-3:02
        bronze.append(late)
        sent.extend(late)
        return passed_gate(batch.stage(spark, cfg, p))

    def last_merge() -> dict:
        return DeltaTable.forName(spark, table).history(1).collect()[0].asDict()

    staged = late_round(900)
    assert batch_publish.staged_ops(cfg, staging) == ("update",)
    published = batch.publish(spark, cfg, p, staged.run_id)
    merge = last_merge()
    assert (merge["operation"], merge["operationParameters"]["notMatchedPredicates"]) == ("MERGE", "[]")
    assert table_rows(spark, p) == exact_sensor_windows(sent, published.cutoff)

    staged = late_round(950)
    spark.sql(f"DELETE FROM {table} WHERE sensor_id = 's0' AND window_start = TIMESTAMP '2026-03-01 12:01:00'")
    published = batch.publish(spark, cfg, p, staged.run_id)
    assert last_merge()["operationParameters"]["notMatchedPredicates"] != "[]"  # the second MERGE, with inserts
    assert table_rows(spark, p) == exact_sensor_windows(sent, published.cutoff)
    as_of = {r["as_of"] for r in spark.table(table).where(f"run_id = '{staged.run_id}'").select("as_of").collect()}
    assert as_of == {f"{table} v{last_merge()['version']} (run {staged.run_id}, bronze v{staged.bronze_version})"}


def test_an_incremental_run_whose_rows_fail_the_gate_publishes_nothing(spark: SparkSession,
                                                                       cfg: TidewaterConfig) -> None:
    """An incremental run's gate audits its rows while they are written (``spark_jobs.batch.gate``): a late
    event above the pipeline's temperature range makes its published window fail the staging suite, and
    nothing of the run is published. The audited rows are the staged ones. Runs last in this module, over
    the sensor test's bronze (the bad event stays in it)."""
    from lakehouse.errors import TidewaterError
    from spark_jobs.batch import wap as batch
    from spark_jobs.io import batch_runs

    p = load_pipeline("sensor_readings")
    before = table_rows(spark, p)
    assert (12, 2) in {(k[1].hour, k[1].minute) for k in before}, "the 12:02 windows are published"
    failed_before = {r.run_id for r in batch_runs.runs(spark, p.name) if r.status == "failed"}
    cached_before = cached_frames(spark)
    Bronze(spark, p).append([sensor(7000, "s1", 150_000, 99.0)])  # 12:02:30; the range is [-90, 70]
    with pytest.raises(TidewaterError, match=r"(?s)quality gate failed on batch\.sensor_readings__staging.*max_temperature.*\[99\.0\]"):
        batch.run(spark, cfg, p)
    assert table_rows(spark, p) == before
    failed = [r for r in batch_runs.runs(spark, p.name) if r.status == "failed" and r.run_id not in failed_before]
    assert [r.mode for r in failed] == ["incremental"]
    staged = spark.table(naming.staging_table("batch", p.name)).where(f"run_id = '{failed[0].run_id}'")
    assert staged.where("sensor_id = 's1' AND max_temperature = 99.0").count() == 1
    assert cached_frames(spark) == cached_before  # the gate's cache of the staged rows was released
