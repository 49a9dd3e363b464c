"""The batch DataFrames each suite validates (GX validates batch frames, never streaming ones).

* most kinds: the Delta table as it is (a staging table keeps only the rows it writes, not its deletes);
* ``quarantine``: one row ``(bronze_rows, quarantine_rows, quarantine_rate)``;
* ``serving_gap``: one row ``(cutoff, missing_windows)``, the windows that should be in the
  serving view (batch rows ending at or before the last published cutoff, speed rows of the active
  version ending after it; kappa: every speed row) but are not. The cutoff is the caller's to read
  (``spark_jobs.io.batch_runs.published_cutoff`` owns that fact): the suites never import the jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from expectations.suites import WINDOW_KINDS, ordered_pairs, pair_gap
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import active_version

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import Column, DataFrame, SparkSession

CutoffReader = Callable[["SparkSession", str], "datetime | None"]
"""Reads a pipeline's last published batch cutoff (``None`` before the first publish)."""


def table_frame(spark: SparkSession, kind: str, table: str, p: Pipeline, rows: DataFrame | None = None) -> DataFrame:
    """The table to validate (or ``rows``, the frame being written to it: a batch run's staged rows).
    Window tables' doubles are rounded to 9 decimals, so ``min <= avg <= max`` tolerates floating-point
    summation error (an avg of 42.599999999999994 over values all 42.6), and they get one difference
    column per ordered pair (``suites.ordered_pairs``; timestamps in microseconds), which their suites
    check with the other column checks in one aggregate job."""
    from pyspark.sql import functions as F

    df = spark.table(table) if rows is None else rows
    if "op" in df.columns:  # a staging table: deleted windows carry no values
        df = df.where("op <> 'delete'")
    if kind == "bronze":
        return df
    types = dict(df.dtypes)
    df = df.select(*(F.round(c, 9).alias(c) if t == "double" else F.col(c) for c, t in df.dtypes))
    if kind not in WINDOW_KINDS:
        return df

    def value(c: str) -> Column:
        return F.unix_micros(F.col(c)) if types[c] == "timestamp" else F.col(c)

    return df.select("*", *((value(high) - value(low)).alias(pair_gap(high, low)) for high, low, _ in ordered_pairs(p)))


def quarantine_rate_frame(spark: SparkSession, p: Pipeline, quarantine_table: str) -> DataFrame:
    bronze_rows = _count(spark, p.tables.bronze)
    quarantine_rows = _count(spark, quarantine_table)
    total = bronze_rows + quarantine_rows
    rate = quarantine_rows / total if total else 0.0
    return spark.createDataFrame([(bronze_rows, quarantine_rows, float(rate))],
                                 "bronze_rows bigint, quarantine_rows bigint, quarantine_rate double")


def serving_gap_frame(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, serving_table: str,
                      read_cutoff: CutoffReader) -> DataFrame:
    from pyspark.sql import functions as F

    cutoff = read_cutoff(spark, p.name)
    grain = list(p.grain)
    serving = spark.table(serving_table).select(*grain)
    expected = None
    if cutoff is not None and cfg.mode != "kappa" and _exists(spark, p.tables.batch):
        expected = spark.table(p.tables.batch).where(F.col("window_end") <= F.lit(cutoff)).select(*grain)
    speed_name = naming.speed_table(p.name, active_version(cfg, p.name))
    if _exists(spark, speed_name):
        speed = spark.table(speed_name)
        if cutoff is not None and cfg.mode != "kappa":
            speed = speed.where(F.col("window_end") > F.lit(cutoff))
        expected = speed.select(*grain) if expected is None else expected.unionByName(speed.select(*grain))
    missing = 0 if expected is None else expected.join(serving, grain, "left_anti").count()
    return spark.createDataFrame([(cutoff, int(missing))], "cutoff timestamp, missing_windows bigint")


def _exists(spark: SparkSession, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def _count(spark: SparkSession, table: str) -> int:
    return spark.table(table).count() if _exists(spark, table) else 0
