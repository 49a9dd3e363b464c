"""``serving.<p>``: the one view readers query, merging the batch and speed layers at the cutoff.

Lambda mode: rows of ``batch.<p>`` (with the served columns each publish wrote beside them) for
windows with ``window_end <= cutoff`` (the latest published run's cutoff, written into the view DDL as
a literal each time a run is published) and rows of the ACTIVE speed table version with ``window_end >
cutoff``. Both sides cut on the same column with complementary predicates, so a window is never shown
twice nor missing, and the view is swapped by one catalog operation: ``ALTER VIEW ... AS`` (one
metastore ``alter_table``). Not ``CREATE OR REPLACE VIEW``: Spark implements that as drop + create, and a
reader in between gets TABLE_OR_VIEW_NOT_FOUND (seen in the Kappa replay test). Kappa mode: only the
active speed table. The view reads its Delta tables by location (``delta_relation``): a query then makes
one metastore lookup, not one per table.

Finality is decided at publish, not by a join at query time (the join made a point query 3-4x slower
than one table, scenario 5): the publish MERGEs the run's staged windows into ``batch.<p>`` with
their ``finality`` against the active speed table ('final' when the batch value equals what the speed
layer published, 'corrected' when it differs or the speed layer never published the window) and
``as_of``. Windows at or before the cutoff are past the speed layer's watermark, so its value does not
change afterwards. A reader between that MERGE and the view swap sees the new rows with the old cutoff:
still each window once.

Columns: grain, aggregates, ``max_event_time``, ``source`` ('batch' | 'speed'), ``finality`` ('final',
'corrected', or 'provisional' for speed rows; in kappa mode speed rows past the watermark are 'final'),
``as_of`` (the Delta versions behind the row: ``batch.<p> v<N> (run <id>, bronze v<M>)``, N being the
batch table version that published the row; ``<speed table> micro-batch <K>``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from infra.utc import EPOCH, sql_timestamp
from lakehouse import contracts, naming, speed_fold
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import active_version
from spark_jobs.io.batch_runs import published_cutoff
from spark_jobs.io.delta_io import merge_changes, table_version
from spark_jobs.io.ops_reader import table_path
from spark_jobs.shared import definition_guard
from spark_jobs.shared.locks import batch_lock, reentrant, serving_view_lock_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

VIEW_LOCK_WAIT_SECONDS = 600.0  # its holders replace one view (and a switch records one version): seconds


def view_lock(cfg: TidewaterConfig, p: Pipeline) -> Any:
    """The lock of ``serving.<p>``'s speed version: ``refresh_view`` holds it from its read of the active
    version to the replace of the view, and a replay switch holds it around its refresh and its
    ``set_active_version``, so neither comes between the other's two steps. A thread that holds it
    already (a switch, then its refresh) holds it on."""

    return reentrant(cfg, serving_view_lock_name(p.name), VIEW_LOCK_WAIT_SECONDS)


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


def served_select(p: Pipeline, speed_table: str, batch_rows: str, batch_version: int, extra: str = "") -> str:
    """SELECT of batch rows as ``batch.<p>`` holds them once published: ``batch_rows`` (a table or a
    subquery, alias ``b``, with the computed batch columns) with their ``finality`` against ``speed_table``
    and their ``as_of`` (``batch_version``: the ``batch.<p>`` version whose commit publishes them)."""
    cols = [c for c, _ in contracts.computed_batch_columns(p)]
    on = " AND ".join(f"b.`{c}` <=> s.`{c}`" for c in p.grain)
    batch_cols = ", ".join(f"b.`{c}`" for c in cols)
    return (f"SELECT {batch_cols}, CASE WHEN {_differs(p)} THEN 'corrected' ELSE 'final' END AS finality, "
            f"concat('{p.tables.batch} v{batch_version} (run ', b.run_id, ', bronze v', b.bronze_version, "
            f"')') AS as_of{extra} FROM {batch_rows} b LEFT JOIN {speed_table} s ON {on}")


def view_sql(p: Pipeline, mode: str, speed_version: int, cutoff: datetime | None,
             relation: Callable[[str], str] = str) -> str:
    """The SELECT behind ``serving.<p>`` (pure: the caller passes the active speed version and the cutoff).
    ``as_of`` of a speed row: ``<speed table> micro-batch <K>``, K being the ``txnVersion`` of the Delta
    commit that last wrote the row. ``relation``: how the view reads a Delta table given its name
    (``refresh_view``: by its location, see ``delta_relation``); a speed table that is itself a view
    (tumbling and sliding pipelines) is read through its fold, inlined over its partials."""
    cols = contracts.result_columns(p)
    speed_cols = ", ".join(f"s.`{c}`" for c in cols)
    speed = contracts.speed(p, speed_version)
    speed_table = speed.name
    if speed.view:  # lambda's speed rows are all provisional: no is_final (a second read of the partials)
        source = f"({speed_fold.fold_sql(p, relation(speed.requires[0].name), finality=mode == 'kappa')})"
    else:
        source = relation(speed_table)
    speed_as_of = f"concat('{speed_table} micro-batch ', s.batch_id) AS as_of FROM {source} s"
    if mode == "kappa":
        return (f"SELECT {speed_cols}, 'speed' AS source, "
                f"CASE WHEN s.is_final THEN 'final' ELSE 'provisional' END AS finality, {speed_as_of}")
    cut = sql_timestamp(cutoff or EPOCH)
    served = ", ".join(f"b.`{c}`" for c, _ in contracts.SERVED_COLUMNS)
    batch_cols = ", ".join(f"b.`{c}`" for c in cols)
    return (f"SELECT {batch_cols}, 'batch' AS source, {served} FROM {relation(p.tables.batch)} b "
            f"WHERE b.window_end <= {cut} "
            f"UNION ALL SELECT {speed_cols}, 'speed' AS source, 'provisional' AS finality, {speed_as_of} "
            f"WHERE s.window_end > {cut}")


def delta_relation(cfg: TidewaterConfig, table: str) -> str:
    """``delta.`<location>```: the Delta table ``table`` read by its location. A query of the view then
    looks up only the view in the metastore, not each table behind it: the Thrift server serializes
    every metastore call of every session behind one lock (``HiveExternalCatalog.withClient``), and
    with 8 JDBC clients a third of their handler threads' samples waited on it. Tidewater's
    tables are managed tables in the warehouse (``ops_reader.table_path``): the location is known
    without ``DESCRIBE DETAIL``, which loads the table's Delta snapshot (0.3-1 s per table at publish)."""
    location = f"file:{table_path(cfg, table)}"
    return f"delta.`{location.replace('`', '``')}`"


# (Spark application, batch table) pairs whose served columns this process checked (``add_served_columns``)
_SERVED_CHECKED: set[tuple[str, str]] = set()


def add_served_columns(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, speed_table: str,
                       locked: bool = False) -> None:
    """A ``batch.<p>`` from before it held ``SERVED_COLUMNS`` (they were in a copy then,
    ``serving.<p>__published``, which is no longer read): add them and fill every row, once, under the
    batch lock (``locked``: the caller holds it), so that no publish numbers its commit meanwhile."""
    from pyspark.sql import functions as F

    table = p.tables.batch
    key = (spark.sparkContext.applicationId, table)
    if key in _SERVED_CHECKED:
        return
    served = [c for c, _ in contracts.SERVED_COLUMNS]
    if not set(served) <= set(spark.table(table).columns):
        with contextlib.nullcontext() if locked else batch_lock(cfg, p.name):
            missing = [(c, t) for c, t in contracts.SERVED_COLUMNS if c not in spark.table(table).columns]
            if missing:
                spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({', '.join(f'`{c}` {t}' for c, t in missing)})")
                rows = spark.sql(served_select(p, speed_table, table, table_version(spark, table) + 1))
                merge_changes(spark, rows.withColumn("op", F.lit("upsert")), table, p.grain, served)
    _SERVED_CHECKED.add(key)


def refresh_view(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, speed_version: int | None = None,
                 cutoff: datetime | None = None) -> str:
    """(Re)create ``serving.<p>`` on the given speed version, or the active one, read under ``view_lock``
    and held until the view is replaced: a replay switch (its refresh and its record of the new active
    version, under the same lock) comes wholly before or after, so the view never stays on a version
    the switch froze. Returns the DDL."""
    lambda_mode = cfg.mode != "kappa"
    if lambda_mode:  # before the lock: a first fill of the served columns takes the batch lock
        labelled_by = speed_version or active_version(cfg, p.name)  # the fill's finality only
        contracts.ensure(spark, contracts.batch(p), contracts.speed(p, labelled_by))
        add_served_columns(spark, cfg, p, naming.speed_table(p.name, labelled_by))
        cutoff = cutoff or published_cutoff(spark, p.name)
    with view_lock(cfg, p):
        version = speed_version or active_version(cfg, p.name)
        contracts.ensure(spark, contracts.speed(p, version))
        mode = "lambda" if lambda_mode and one_definition(cfg, p, version) else "kappa"
        select = view_sql(p, mode, version, cutoff, lambda t: delta_relation(cfg, t))
        return replace_view(spark, p.tables.serving, select)


def one_definition(cfg: TidewaterConfig, p: Pipeline, version: int) -> bool:
    """Whether ``batch.<p>`` and speed version ``version`` hold windows of one definition: only then does
    ``serving.<p>`` merge them. Otherwise it shows the speed layer alone, as in Kappa mode, and says so
    on stderr, until both are rebuilt under one definition: the view never shows two at once."""
    apart = definition_guard.apart(cfg, p.tables.batch, contracts.storage_table(p, version), p)
    if apart:
        print(f"serving: {p.tables.serving} shows the speed layer only: {apart}",
              file=sys.stderr, flush=True)
    return not apart


def replace_view(spark: SparkSession, view: str, select: str) -> str:
    """Point ``view`` at ``select``; returns the DDL that did it. ``ALTER VIEW`` is atomic (readers see
    the old or the new definition). Never ``CREATE VIEW IF NOT EXISTS`` on a guess that the view is
    missing: when another process created it meanwhile, that statement does nothing and the view keeps
    the other definition (a batch publish left serving on the speed job's cutoff-less view). The
    catalog's answer only picks the first statement (so the usual path logs no error). The view's
    stored text is read back: a refresh that did not take effect fails instead of passing silently.
    A view that already holds ``select`` (a batch run that did not move the cutoff) is left alone."""
    exists = spark.catalog.tableExists(view)  # a hint only: either statement falls back to the other
    if exists and holds(spark, view, select):
        return f"ALTER VIEW {view} AS {select}"  # holds it already: not run (its analysis loads every table)
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


def holds(spark: SparkSession, view: str, select: str) -> bool:
    """Whether ``view`` exists and stores ``select`` (False when it cannot be read: dropped meanwhile)."""
    try:
        return view_text(spark, view).strip() == select.strip()
    except Exception:  # noqa: BLE001 - any failure to read it means: write it
        return False


def view_text(spark: SparkSession, view: str) -> str:
    """The SELECT a view stores (``View Text`` of ``DESCRIBE TABLE EXTENDED``)."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {view}").collect()
    return next((r["data_type"] for r in rows if r["col_name"] == "View Text"), "")
