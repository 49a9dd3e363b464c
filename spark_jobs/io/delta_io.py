"""Delta Lake writes used by the jobs: idempotent appends and idempotent MERGE upserts.

Streaming appends carry ``txnAppId``/``txnVersion`` (the micro-batch id), so a micro-batch that
Spark replays after a crash is skipped by Delta instead of written twice. The app id is tied to
the query version (see ``lakehouse.naming.txn_app_id``): a new checkpoint always means a new id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def idempotent_append(df: DataFrame, table: str, app_id: str, version: int) -> None:
    """Append ``df`` unless transaction ``(app_id, version)`` was already committed to ``table``."""
    (df.write.format("delta").mode("append")
     .option("txnAppId", app_id).option("txnVersion", version).saveAsTable(table))


def tagged_append(df: DataFrame, table: str, tag: str) -> None:
    """A plain append (no ``txnAppId`` lookup, which costs Delta two state reconstructions per write)
    whose commit carries ``tag`` as ``userMetadata``; the caller makes it idempotent (``io.rerun``)."""
    df.write.format("delta").mode("append").option("userMetadata", tag).saveAsTable(table)


def key_condition(keys: Sequence[str]) -> str:
    """Null-safe match of target ``t`` and source ``s`` rows on ``keys`` (the MERGE condition)."""
    return " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)


def merge_upsert(spark: SparkSession, df: DataFrame, table: str, keys: Sequence[str],
                 newer_than: str | None = None, target_filter: str | None = None) -> None:
    """Upsert ``df`` into ``table`` on ``keys`` (null-safe). Rows carry absolute values, so
    re-running the same MERGE leaves the table unchanged. ``newer_than`` (a column) skips updates
    that would replace a row with an older one. ``target_filter`` (SQL on alias ``t``) must hold
    for every target row that a source row can match; Delta uses it to skip files."""
    from delta.tables import DeltaTable

    cond = key_condition(keys)
    if target_filter:
        cond = f"{target_filter} AND {cond}"
    update_cond = f"s.`{newer_than}` >= t.`{newer_than}`" if newer_than else None
    (DeltaTable.forName(spark, table).alias("t").merge(df.alias("s"), cond)
     .whenMatchedUpdateAll(condition=update_cond).whenNotMatchedInsertAll().execute())


def merge_changes(spark: SparkSession, changes: DataFrame, table: str, keys: Sequence[str],
                  columns: Sequence[str]) -> None:
    """Apply staged changes in one MERGE: rows with ``op = 'upsert'`` replace or insert ``columns``,
    rows with ``op = 'delete'`` remove their match (a full recompute replaces the table: ``replace_rows``)."""
    from delta.tables import DeltaTable

    values: dict[str, Any] = {f"`{c}`": f"s.`{c}`" for c in columns}
    (DeltaTable.forName(spark, table).alias("t").merge(changes.alias("s"), key_condition(keys))
     .whenMatchedDelete(condition="s.op = 'delete'")
     .whenMatchedUpdate(condition="s.op = 'upsert'", set=values)
     .whenNotMatchedInsert(condition="s.op = 'upsert'", values=values).execute())


def replace_rows(spark: SparkSession, rows: DataFrame, table: str) -> None:
    """Make ``rows`` the whole content of ``table`` in one overwrite commit: what a MERGE of a full
    recompute would leave (every row matched or removed), without joining the old rows. Readers see
    the old or the new version; the table keeps its schema, properties and location; columns go by name."""
    rows.select(*spark.table(table).columns).write.mode("overwrite").insertInto(table)


def last_commit_metrics(spark: SparkSession, table: str) -> dict[str, str]:
    """``operationMetrics`` of the table's latest commit (e.g. ``numOutputRows`` of a write)."""
    from delta.tables import DeltaTable

    return dict(DeltaTable.forName(spark, table).history(1).collect()[0]["operationMetrics"] or {})


def last_write_version(spark: SparkSession, table: str) -> int:
    """Version of the table's latest commit that changed its rows: a later OPTIMIZE (auto compaction
    after that write, or the maintenance DAG) rewrites files without changing rows and is skipped."""
    from delta.tables import DeltaTable

    for commit in DeltaTable.forName(spark, table).history(10).collect():
        if commit["operation"] != "OPTIMIZE":
            return int(commit["version"])
    return table_version(spark, table)


def table_version(spark: SparkSession, table: str) -> int:
    """Latest commit version of a Delta table."""
    from delta.tables import DeltaTable

    return int(DeltaTable.forName(spark, table).history(1).collect()[0]["version"])

