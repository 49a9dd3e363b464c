"""``serving.<p>``: the one view readers query, merging the batch and speed layers at the cutoff.

Lambda mode: batch rows for windows with ``window_end <= cutoff`` (the latest published batch
run's cutoff, written into the view DDL as a literal each time a run is published) and rows of the
ACTIVE speed table version with ``window_end > cutoff``. Both sides cut on the same column with
complementary predicates, so a window is never shown twice nor missing, and the view is swapped
by one catalog operation: ``ALTER VIEW ... AS`` (one metastore ``alter_table``). Not ``CREATE OR
REPLACE VIEW``: Spark implements that as drop + create, and a reader in between gets
TABLE_OR_VIEW_NOT_FOUND (seen in the Kappa replay test). Kappa mode: only the active speed table.

Columns: grain, aggregates, ``max_event_time``, ``source`` ('batch' | 'speed'), ``finality``
('final' batch value equal to what the speed layer published, 'corrected' batch value that differs
from it or that the speed layer never published, 'provisional' speed value; in kappa mode speed rows
past the watermark are 'final'), ``as_of`` (the Delta versions behind the row).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from lakehouse.utc import sql_timestamp

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _differs(p: Pipeline) -> str:
    """SQL predicate: the batch row b differs from the speed row s (or s is missing)."""
    parts = [f"s.`{p.grain[0]}` IS NULL"]
    for agg in p.aggregates:
        a = agg.name
        if contracts.aggregate_type(p, agg.fn, agg.column) == "double":
            parts.append(f"coalesce(abs(b.`{a}` - s.`{a}`) > {contracts.DOUBLE_TOLERANCE} * greatest(1.0, abs(b.`{a}`)), true)")
        else:
            parts.append(f"NOT (b.`{a}` <=> s.`{a}`)")
    return " OR ".join(parts)


def view_sql(p: Pipeline, mode: str, speed_table: str, cutoff: datetime | None, batch_version: int | None = None) -> str:
    """The SELECT behind ``serving.<p>`` (pure: the caller passes the active speed table, the cutoff and
    the Delta version of ``batch.<p>`` that the cutoff belongs to).

    ``as_of`` of a batch row: ``batch.<p> v<N> (run <id>, bronze v<M>)``, the batch table version
    published and the bronze version it was computed from; of a speed row: ``<speed table> micro-batch
    <K>``, K being the ``txnVersion`` of the Delta commit that last wrote the row."""
    cols = contracts.result_columns(p)
    speed_cols = ", ".join(f"s.`{c}`" for c in cols)
    if mode == "kappa":
        return (f"SELECT {speed_cols}, 'speed' AS source, "
                "CASE WHEN s.is_final THEN 'final' ELSE 'provisional' END AS finality, "
                f"concat('{speed_table} micro-batch ', s.batch_id) AS as_of FROM {speed_table} s")
    cut = sql_timestamp(cutoff or EPOCH)
    batch_table = naming.table("batch", p.name)
    on = " AND ".join(f"b.`{c}` <=> s.`{c}`" for c in p.grain)
    batch_cols = ", ".join(f"b.`{c}`" for c in cols)
    return (
        f"SELECT {batch_cols}, 'batch' AS source, "
        f"CASE WHEN {_differs(p)} THEN 'corrected' ELSE 'final' END AS finality, "
        f"concat('{batch_table} v{-1 if batch_version is None else batch_version} (run ', b.run_id, "
        f"', bronze v', b.bronze_version, ')') AS as_of "
        f"FROM {batch_table} b LEFT JOIN {speed_table} s ON {on} WHERE b.window_end <= {cut} "
        f"UNION ALL SELECT {speed_cols}, 'speed' AS source, 'provisional' AS finality, "
        f"concat('{speed_table} micro-batch ', s.batch_id) AS as_of FROM {speed_table} s WHERE s.window_end > {cut}"
    )


def refresh_view(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, speed_version: int | None = None,
                 cutoff: datetime | None = None) -> str:
    """(Re)create ``serving.<p>`` on the active (or given) speed version; returns the DDL."""
    from lakehouse.speed_versions import active_version
    from spark_jobs.batch_runs import published_cutoff
    from spark_jobs.io.delta_io import table_version

    version = speed_version or active_version(cfg, p.name)
    contracts.ensure(spark, contracts.speed(p, version))
    if cfg.mode != "kappa":
        contracts.ensure(spark, contracts.batch(p))
        cutoff = cutoff or published_cutoff(spark, p.name)
    view = naming.table("serving", p.name)
    batch_version = None if cfg.mode == "kappa" else table_version(spark, naming.table("batch", p.name))
    select = view_sql(p, cfg.mode, naming.speed_table(p.name, version), cutoff, batch_version)
    return replace_view(spark, view, select)


def replace_view(spark: SparkSession, view: str, select: str) -> str:
    """Point ``view`` at ``select``; returns the DDL that did it. ``ALTER VIEW`` is atomic (readers see
    the old or the new definition). Never ``CREATE VIEW IF NOT EXISTS`` on a guess that the view is
    missing: when another process created it meanwhile, that statement does nothing and the view keeps
    the other definition (a batch publish left serving on the speed job's cutoff-less view). The
    catalog's answer only picks the first statement (so the usual path logs no error). The view's
    stored text is read back: a refresh that did not take effect fails instead of passing silently."""
    exists = spark.catalog.tableExists(view)  # a hint only: either statement falls back to the other
    for attempt in range(3):
        ddl = f"{'ALTER' if exists else 'CREATE'} VIEW {view} AS {select}"
        try:
            spark.sql(ddl)
        except Exception as exc:
            gone = "TABLE_OR_VIEW_NOT_FOUND" in str(exc) or "NoSuchTable" in str(exc)
            if attempt == 2 or not (gone if exists else any(c in str(exc) for c in contracts.CREATE_RACE_ERRORS)):
                raise
            exists = not exists  # dropped, or created by another process, meanwhile
            continue
        if view_text(spark, view).strip() == select.strip():
            return ddl
        exists = True  # replaced by another process meanwhile: write it again
    raise RuntimeError(f"serving: {view} does not hold the definition written 3 times (another process keeps "
                       f"replacing it?); it holds: {view_text(spark, view)[:300]}")


def view_text(spark: SparkSession, view: str) -> str:
    """The SELECT a view stores (``View Text`` of ``DESCRIBE TABLE EXTENDED``)."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {view}").collect()
    return next((r["data_type"] for r in rows if r["col_name"] == "View Text"), "")
