"""The quality gate's verdict is recorded with the run, and publish requires a passing one on the run's rows.

A staged run without a passing verdict on its exact rows (none yet, a failed one, or one on rows that
changed since) is never published by run id, whatever the DAG's validate task shows; the plain
``tidewater batch`` records its verdict in the same form. Real Spark + Delta + the metastore, no Kafka;
the tests run in order over one ``sensor_readings`` history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from lakehouse import contracts, naming
from lakehouse.pipeline import Pipeline, load_pipeline
from lakehouse.run_records import BatchRun
from tests.integration.test_publish_view import (
    Bronze,
    result_rows,
    stack,  # noqa: F401 - its metastore alone, for this module too
    stage_and_check,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration
PIPELINE = "sensor_readings"


def test_an_ops_batch_runs_without_the_verdict_columns_gets_them(spark: SparkSession) -> None:
    """A table made before the contract had ``staging_version``, ``gate`` and ``gated_version``: the first
    record adds them (an append of the contract's columns would fail), its older rows read them as null.
    First in this module: once per Spark application."""
    from spark_jobs.io import batch_runs

    older = [(c, t) for c, t in contracts.BATCH_RUNS.columns if c not in ("staging_version", "gate", "gated_version")]
    spark.sql(f"CREATE TABLE {batch_runs.TABLE} ({', '.join(f'`{c}` {t}' for c, t in older)}) USING delta")
    run = BatchRun.from_row({"run_id": "old-run", "pipeline": "old", "mode": "full", "status": "staged",
                             "staged_at": batch_runs.now()})
    spark.createDataFrame([tuple(getattr(run, c) for c, _ in older)], ", ".join(f"`{c}` {t}" for c, t in older)) \
        .write.format("delta").mode("append").saveAsTable(batch_runs.TABLE)
    batch_runs.save(spark, run.with_verdict(True, 3))
    assert spark.table(batch_runs.TABLE).columns == contracts.BATCH_RUNS.column_names
    [validated] = batch_runs.runs(spark, "old")
    assert (validated.status, validated.gate, validated.gated_version) == ("validated", "passed", 3)
    assert spark.table(batch_runs.TABLE).where("status = 'staged'").collect()[0]["gate"] is None


def refused(capfd: pytest.CaptureFixture[str], p: Pipeline, run_id: str) -> str:
    """``tidewater batch <p> --publish --run-id <run_id>`` (the DAG's publish task) is refused: exit 2 and
    one ``tidewater: `` line naming the run and the command that gives a verdict."""
    from tidewater.cli import run

    capfd.readouterr()
    assert run(["batch", p.name, "--publish", "--run-id", run_id]) == 2, "the run was published"
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("tidewater: ")]
    assert len(lines) == 1 and run_id in lines[0] and f"'tidewater check {p.name} --kind staging'" in lines[0], lines
    return lines[0]


def current(spark: SparkSession, p: Pipeline, run_id: str) -> BatchRun:
    from spark_jobs.io import batch_runs

    return next(r for r in batch_runs.runs(spark, p.name) if r.run_id == run_id)


def test_a_verdict_holds_for_the_rows_it_validated_only(spark: SparkSession, cfg: TidewaterConfig,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    """The plain ``tidewater batch`` records its gate's verdict with the run, on the staging version it
    wrote. A run validated by ``tidewater check --kind staging`` whose staged rows then change (here an
    UPDATE of staging) is refused: its verdict is on other rows."""
    from spark_jobs.batch import wap as batch
    from tidewater.cli import run

    p = load_pipeline(PIPELINE)
    bronze = Bronze(spark, p)
    bronze.append(0, 600)  # 10 minutes
    plain = batch.run(spark, cfg, p)
    recorded = current(spark, p, plain.run_id)
    assert (recorded.status, recorded.gate) == ("published", "passed")
    assert recorded.gated_version == recorded.staging_version is not None

    bronze.append(600, 720)
    staged = stage_and_check(spark, cfg, p)
    assert (current(spark, p, staged.run_id).status, current(spark, p, staged.run_id).gate) == (
        "validated", "passed")
    table, staging = naming.table("batch", p.name), naming.staging_table("batch", p.name)
    before = result_rows(spark.table(table))
    spark.sql(f"UPDATE {staging} SET max_temperature = 99.0 WHERE sensor_id = 's1'")
    assert "changed since" in refused(capfd, p, staged.run_id)
    assert run(["check", p.name, "--kind", "staging", "--no-docs"]) == 1  # the changed rows fail, and are no run's
    refused(capfd, p, staged.run_id)
    assert result_rows(spark.table(table)) == before


def test_a_run_whose_rows_failed_the_gate_is_never_published(spark: SparkSession, cfg: TidewaterConfig,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
    """A late reading above the pipeline's range (99 degrees; ``quality.ranges`` ends at 70) in a window
    the run stages: publishing the staged run is refused before its gate ran (the DAG's validate task
    marked successful) and after it failed; ``batch.<p>`` keeps its rows. The plain ``tidewater batch``
    records its failed verdict the same way."""
    from lakehouse.errors import TidewaterError
    from spark_jobs.batch import wap as batch
    from spark_jobs.io import batch_runs
    from tidewater.cli import run

    p = load_pipeline(PIPELINE)
    table = naming.table("batch", p.name)
    before = result_rows(spark.table(table))
    bronze = Bronze(spark, p)
    bronze.write([bronze.row("s1", 750, 99.0)])  # 12:12:30
    bronze.append(720, 960)  # until 12:16: the window 12:12-12:13 completes
    staged = batch.stage(spark, cfg, p)
    assert "no passing" in refused(capfd, p, staged.run_id)
    assert run(["check", p.name, "--kind", "staging", "--no-docs"]) == 1
    assert "failed the quality gate" in refused(capfd, p, staged.run_id)
    failed = current(spark, p, staged.run_id)
    assert (failed.status, failed.gate, failed.gated_version) == ("failed", "failed", failed.staging_version)
    assert result_rows(spark.table(table)) == before

    with pytest.raises(TidewaterError, match="quality gate failed"):
        batch.run(spark, cfg, p)
    plain = batch_runs.runs(spark, p.name)[-1]
    assert (plain.status, plain.gate, plain.gated_version) == ("failed", "failed", plain.staging_version)
    assert plain.run_id != staged.run_id and result_rows(spark.table(table)) == before
