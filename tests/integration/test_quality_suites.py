"""Great Expectations suites on real Delta tables (Spark + Hive metastore), bad rows included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from tests.integration.speed_helpers import write_speed_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration

PIPELINE = "sensor_readings"


def write_bronze(spark: SparkSession, cfg: TidewaterConfig, readings: list[tuple[str, float]], start: datetime | None = None,
                 first_offset: int = 0) -> None:
    """Append contract-shaped bronze rows for ``sensor_readings``: one event per (sensor_id, temperature),
    10 s apart from ``start``, with distinct Kafka offsets (the bronze grain)."""
    from lakehouse import contracts
    from lakehouse.pipeline import load_pipeline

    p = load_pipeline(PIPELINE)
    contract = contracts.bronze(p)
    contracts.ensure(spark, contract)
    start = start or datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
    rows = []
    for i, (sensor, temp) in enumerate(readings):
        ts = start + timedelta(seconds=10 * i)
        rows.append((f"e-{first_offset + i}", sensor, int(ts.timestamp() * 1000), float(temp), ts, p.topic, 0,
                     first_offset + i, ts, ts, ts.date()))
    schema = ", ".join(f"`{c}` {t}" for c, t in contract.columns)
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(contract.name)


@pytest.mark.parametrize("in_memory_max_rows", [0, 20_000], ids=["spark engine", "pandas engine"])
def test_bronze_suite_catches_impossible_temperature(spark: SparkSession, cfg: TidewaterConfig,
                                                     in_memory_max_rows: int) -> None:
    """The same suite and verdicts whichever GX engine runs it (small frames are validated in memory)."""
    from expectations.runner import validate_table

    write_bronze(spark, cfg, [("s-1", 20.5), ("s-2", 21.0), ("s-1", 19.0)], first_offset=in_memory_max_rows)
    good = validate_table(cfg, PIPELINE, "bronze", "bronze.sensor_readings", spark=spark,
                          in_memory_max_rows=in_memory_max_rows)
    print(good.summary())
    assert good.success, good.summary()
    assert good.evaluated >= 4
    from expectations.frames import table_frame
    from lakehouse.pipeline import load_pipeline

    held = table_frame(spark, "bronze", "bronze.sensor_readings", load_pipeline(PIPELINE)).storageLevel  # GX persists what it validates
    assert not (held.useMemory or held.useDisk), f"the validated frame is still cached ({held}): a leak in the job service"
    write_bronze(spark, cfg, [("s-3", 1000.0)], first_offset=in_memory_max_rows + 100)
    bad = validate_table(cfg, PIPELINE, "bronze", "bronze.sensor_readings", spark=spark,
                         in_memory_max_rows=in_memory_max_rows)
    print(bad.summary())
    assert not bad.success
    assert any("temperature" in f and "1000" in f for f in bad.failures), bad.summary()
    assert (cfg.data_dir / "docs" / "index.html").exists()
    spark.sql("DROP TABLE bronze.sensor_readings")  # append-only: the next parameter starts from a new table


def test_window_suite_checks_min_avg_max_and_window_order(spark: SparkSession, cfg: TidewaterConfig) -> None:
    from expectations.runner import validate_table
    from lakehouse import contracts
    from lakehouse.pipeline import load_pipeline

    p = load_pipeline(PIPELINE)
    contract = contracts.speed(p)
    contracts.ensure(spark, contract)
    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    t1 = t0 + timedelta(minutes=1)
    rows = [("s-1", t0, t1, 2, 20.0, 19.0, 21.0, t1, t1, 0, True, 40.0, 2),  # + the avg's sum and count
            ("s-2", t1, t0, 0, 25.0, 26.0, 24.0, t1, t1, 0, True, 25.0, 1)]  # reversed window, count 0, min > avg > max
    schema = ", ".join(f"`{c}` {t}" for c, t in contract.columns)
    write_speed_rows(spark, p, 1, spark.createDataFrame(rows, schema))
    out = validate_table(cfg, PIPELINE, "speed", contract.name, spark=spark, build_docs=False)
    print(out.summary())
    assert not out.success
    text = "\n".join(out.failures)
    assert "window_end" in text and "event_count" in text
    assert "avg_temperature" in text and "max_temperature" in text
    # each ordered pair fails on its difference column (s-2: window_end < window_start, min > avg > max)
    for gap in ("window_end_minus_window_start", "avg_temperature_minus_min_temperature",
                "max_temperature_minus_avg_temperature"):
        assert gap in text, f"{gap} not among the failures: {text}"
    assert len(out.failures) == 4, text  # the count and the 3 pairs; min, avg and max are within their range


def test_data_docs_can_be_written_after_the_verdict(spark: SparkSession, cfg: TidewaterConfig) -> None:
    """``docs_later``: the verdict first, then the same pages (this run's result page and the index)."""
    from expectations.runner import validate_table

    write_bronze(spark, cfg, [("s-1", 20.5), ("s-2", 21.0)], first_offset=50_000)
    pages = cfg.data_dir / "docs" / "validations" / "bronze" / "sensor_readings"
    before = set(pages.rglob("*.html")) if pages.exists() else set()
    out = validate_table(cfg, PIPELINE, "bronze", "bronze.sensor_readings", spark=spark, docs_later=True)
    assert out.success and out.docs_build is not None, out.summary()
    out.wait_for_docs()
    new = set(pages.rglob("*.html")) - before
    assert len(new) == 1, f"expected this run's result page, found {sorted(new)}"
    assert (cfg.data_dir / "docs" / "index.html").stat().st_mtime >= max(p.stat().st_mtime for p in new) - 1
    again = validate_table(cfg, PIPELINE, "bronze", "bronze.sensor_readings", spark=spark)  # the lock was released
    assert again.docs_build is None and len(set(pages.rglob("*.html")) - before) == 2
    spark.sql("DROP TABLE bronze.sensor_readings")


def test_quarantine_rate_above_the_max_fails(spark: SparkSession, cfg: TidewaterConfig) -> None:
    from expectations.runner import validate_table
    from lakehouse import contracts
    from lakehouse.pipeline import load_pipeline

    p = load_pipeline(PIPELINE)
    contract = contracts.quarantine(p)
    contracts.ensure(spark, contract)
    now = datetime.now(UTC)
    rows = [(f"not json {i}", p.topic, 0, 1000 + i, now, "MALFORMED_JSON", "not JSON", now) for i in range(5)]
    schema = ", ".join(f"`{c}` {t}" for c, t in contract.columns)
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(contract.name)
    out = validate_table(cfg, PIPELINE, "quarantine", contract.name, spark=spark, build_docs=False)
    print(out.summary())
    assert not out.success and not out.warnings  # above quality.max_quarantine_rate: a failure
    assert out.failures and "quarantine_rate" in out.failures[0] and "'max_value': 0.05" in out.failures[0]


def test_a_definition_changed_without_its_suites_gates_nothing(spark: SparkSession, cfg: TidewaterConfig) -> None:
    """A pipeline whose ``quality.ranges`` changed after its suites were generated: the validation refuses
    with the one line that says which suite is stale and how to regenerate it, before GX reads the table
    (the old suite would still audit the old range)."""
    import dataclasses

    from expectations.runner import validate_table
    from lakehouse.errors import TidewaterError
    from lakehouse.pipeline import load_pipeline

    write_bronze(spark, cfg, [("s-1", 80.0)], first_offset=500)  # within the new range, outside the committed one
    p = load_pipeline(PIPELINE)
    hotter = dataclasses.replace(p, quality={**p.quality, "ranges": {"temperature": [-90.0, 90.0]}})
    with pytest.raises(TidewaterError, match=r"^quality: suite bronze.sensor_readings .* no longer matches "
                                             r"lakehouse/pipelines/sensor_readings.yml .*python -m expectations.suites"):
        validate_table(cfg, hotter, "bronze", "bronze.sensor_readings", spark=spark, build_docs=False)
    assert not validate_table(cfg, p, "bronze", "bronze.sensor_readings", spark=spark, build_docs=False).success
    spark.sql("DROP TABLE bronze.sensor_readings")
