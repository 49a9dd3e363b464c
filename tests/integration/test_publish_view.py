"""A batch publish against the serving view, on real Spark + Delta + the metastore.

* A Kappa replay switch that lands between a publish's read of the active speed version and its
  replace of ``serving.<p>`` must not leave the view on the frozen version: the view reads the active one.
* A publish whose view refresh fails after its rows are in ``batch.<p>``: publishing it again moves the
  view to the run's cutoff.

No Kafka: bronze is written as the ingest query writes it, the speed versions as their queries do.
The tests run in order over one ``sensor_readings`` history (each appends later events). Its helpers
serve ``test_publish_gate`` too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from lakehouse import contracts, naming
from lakehouse.pipeline import Pipeline, load_pipeline
from lakehouse.run_records import BatchRun
from tests.integration.speed_helpers import write_speed_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 12, 0, 0)
PIPELINE = "sensor_readings"
RESULT = ("sensor_id", "window_start", "window_end", "event_count", "avg_temperature", "min_temperature",
          "max_temperature")


@pytest.fixture(scope="module")
def stack(cfg: TidewaterConfig) -> Iterator[TidewaterConfig]:
    """The metastore alone: nothing here reads Kafka."""
    from infra.jars import fetch_jars
    from infra.services import metastore

    fetch_jars()
    try:
        metastore.start(cfg)
        yield cfg
    finally:
        metastore.stop(cfg)


class Bronze:
    """Appends ``sensor_readings`` events to bronze with increasing Kafka offsets (arrival = event time)."""

    def __init__(self, spark: SparkSession, p: Pipeline) -> None:
        self.spark, self.p = spark, p
        contracts.ensure(spark, contracts.bronze(p))
        self.offset = spark.table(naming.table("bronze", p.name)).count()

    def append(self, first_second: int, last_second: int, temperature: float = 20.0) -> None:
        """One event per sensor (s1, s2) every 20 s from ``first_second`` to before ``last_second`` after T0."""
        rows = []
        for second in range(first_second, last_second, 20):
            for sensor in ("s1", "s2"):
                rows.append(self.row(sensor, second, temperature))
        self.write(rows)

    def row(self, sensor: str, second: int, temperature: float) -> tuple[Any, ...]:
        self.offset += 1
        at = T0 + timedelta(seconds=second)
        values = {"event_id": f"e{self.offset}", "sensor_id": sensor, "timestamp": int(at.timestamp() * 1000),
                  "temperature": temperature, "event_time": at, "kafka_topic": self.p.topic, "kafka_partition": 0,
                  "kafka_offset": self.offset, "kafka_timestamp": at, "ingest_time": at, "event_date": at.date()}
        return tuple(values[c] for c, _ in contracts.bronze(self.p).columns)

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        schema = ", ".join(f"`{c}` {t}" for c, t in contracts.bronze(self.p).columns)
        self.spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(
            naming.table("bronze", self.p.name))


def speed_from_bronze(spark: SparkSession, p: Pipeline, version: int, warmer: float) -> None:
    """Speed version ``version`` holds bronze's windows, each reading ``warmer`` degrees higher (so that
    two versions tell apart in every row)."""
    from pyspark.sql import functions as F

    from spark_jobs.transforms.partials import partial_aggregate

    contracts.ensure(spark, contracts.speed(p, version))
    events = spark.table(naming.table("bronze", p.name)).withColumn("temperature", F.col("temperature") + warmer)
    windows = events.transform(partial_aggregate(p)).withColumns(
        {"updated_at": F.current_timestamp(), "batch_id": F.lit(1).cast("bigint"), "is_final": F.lit(False)})
    write_speed_rows(spark, p, version, windows, mode="overwrite")


def result_rows(df: DataFrame) -> set[tuple[Any, ...]]:
    return {tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in df.select(*RESULT).collect()}


def served(spark: SparkSession, p: Pipeline, source: str) -> set[tuple[Any, ...]]:
    return result_rows(spark.table(naming.table("serving", p.name)).where(f"source = '{source}'"))


def stage_and_check(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline) -> BatchRun:
    """``tidewater batch <p> --stage-only`` then ``tidewater batch <p> --audit --run-id ID`` (passing), as the
    DAG's stage and validate tasks run them."""
    from spark_jobs.batch import wap as batch
    from tidewater.cli import run

    staged = batch.stage(spark, cfg, p)
    assert run(["batch", p.name, "--audit", "--run-id", staged.run_id, "--no-docs"]) == 0
    return staged


def test_a_replay_switch_during_a_publish_leaves_serving_on_the_active_version(
        spark: SparkSession, cfg: TidewaterConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """The publish reads the active speed version (v1), then the switch to v2 lands (its view refresh and
    its record of the new active version, under the serving view lock, as ``replay.switch`` holds it),
    then the publish would replace the view: the view must end on v2's rows, not on the frozen v1."""
    from pyspark.sql import functions as F

    from lakehouse.speed_versions import active_version, set_active_version
    from spark_jobs.batch import wap
    from spark_jobs.io import batch_runs
    from spark_jobs.shared import serving_view as serving
    from spark_jobs.shared.background import Background

    p = load_pipeline(PIPELINE)
    Bronze(spark, p).append(0, 600)  # 10 minutes
    speed_from_bronze(spark, p, 1, warmer=0.0)
    speed_from_bronze(spark, p, 2, warmer=5.0)
    serving.refresh_view(spark, cfg, p)
    assert active_version(cfg, p.name) == 1
    staged = stage_and_check(spark, cfg, p)

    at_replace, go_on = threading.Event(), threading.Event()
    replace_view = serving.replace_view

    def publish_waits_before_its_replace(session: SparkSession, view: str, select: str) -> str:
        if not at_replace.is_set():  # the publish's refresh: the first one from here on
            at_replace.set()
            assert go_on.wait(600)
        return replace_view(session, view, select)

    monkeypatch.setattr(serving, "replace_view", publish_waits_before_its_replace)

    def switch_to_v2() -> None:
        with serving.view_lock(cfg, p):
            serving.refresh_view(spark, cfg, p, speed_version=2)
            set_active_version(cfg, p.name, 2, previous=1)

    publishing = Background(wap.publish, spark, cfg, p, staged.run_id)
    assert at_replace.wait(600), "the publish never reached its view replace"
    switching = Background(switch_to_v2)
    switching.thread.join(5)  # it waits for the publish's refresh to end, or switches right away
    switch_waited = switching.thread.is_alive()
    go_on.set()
    publishing.join()
    switching.join()

    assert active_version(cfg, p.name) == 2
    cutoff = batch_runs.published_cutoff(spark, p.name)
    last = batch_runs.last_published(spark, p.name)
    assert cutoff is not None and last is not None and last.run_id == staged.run_id
    above = F.col("window_end") > F.lit(cutoff)
    active = result_rows(spark.table(naming.speed_table(p.name, 2)).where(above))
    frozen = result_rows(spark.table(naming.speed_table(p.name, 1)).where(above))
    assert active and active != frozen
    assert served(spark, p, "speed") == active, "serving reads the frozen v1, not the active v2"
    assert switch_waited, "the switch did not wait for the publish's view refresh"


def test_a_publish_whose_view_refresh_failed_moves_the_view_when_published_again(
        spark: SparkSession, cfg: TidewaterConfig) -> None:
    """The publish's session cannot read Delta tables by path (``spark.sql.runSQLOnFiles`` off), which the
    view's definition does: its MERGE commits, its view refresh fails. The run's rows are in ``batch.<p>``
    (and it is recorded published: the next incremental run folds onto them), and publishing it again,
    as a retried task does, moves the view to the run's cutoff."""
    import time

    from pyspark.sql import functions as F

    from infra.utc import as_utc
    from spark_jobs.batch import wap
    from spark_jobs.io import batch_runs

    p = load_pipeline(PIPELINE)
    published = batch_runs.published_cutoff(spark, p.name)
    assert published is not None
    previous = as_utc(published)
    Bronze(spark, p).append(600, 840)  # minutes 10-14: windows up to 12:11 complete
    staged = stage_and_check(spark, cfg, p)
    cutoff = as_utc(staged.cutoff)
    assert cutoff > previous
    refusing = spark.newSession()
    refusing.conf.set("spark.sql.runSQLOnFiles", "false")
    with pytest.raises(Exception) as failure:  # noqa: PT011 - the view's error, whatever Spark calls it
        wap.publish(refusing, cfg, p, staged.run_id)
    batch = spark.table(naming.table("batch", p.name))
    assert batch.where(f"run_id = '{staged.run_id}'").count() > 0, "the MERGE did not commit"
    deadline = time.monotonic() + 60  # the run record's commit: joined before the error, or still under way
    while batch_runs.already_published(spark, p.name, staged.run_id) is None:
        assert time.monotonic() < deadline, "the run was not recorded published"
        time.sleep(0.5)
    assert served(spark, p, "batch") == result_rows(batch.where(F.col("window_end") <= F.lit(previous))), \
        "the view moved although its refresh failed"

    again = wap.publish(spark, cfg, p, staged.run_id)
    assert again.already_published and again.run_id == staged.run_id
    expected = result_rows(batch.where(F.col("window_end") <= F.lit(cutoff)))
    assert any(as_utc(r[2]) > previous for r in expected), "the run publishes windows past the previous cutoff"
    assert served(spark, p, "batch") == expected, "serving keeps the previous cutoff"
    message = str(failure.value)
    assert len(message.splitlines()) == 1 and f"--publish --run-id {staged.run_id}" in message, message
