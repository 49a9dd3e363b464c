"""The definitions tables were computed under (``lakehouse.definition``), read and kept.

A stored definition is a Delta table property. It is read from the table's log in Python
(``ops_reader.table_properties``: about a millisecond), not with ``SHOW TBLPROPERTIES``: that took a
median 0.135 s in a warm session, and an incremental batch run asked six times (stage, view, ledger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakehouse import contracts, definition
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.io.ops_reader import table_path, table_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def stored(cfg: TidewaterConfig, table: str) -> str | None:
    """The definition ``table`` was computed under (None: not stored, or no such table)."""
    return table_properties(table_path(cfg, table)).get(definition.PROPERTY)


def mismatch(cfg: TidewaterConfig, table: str, p: Pipeline) -> list[str]:
    """The changes from the definition ``table`` holds to ``p`` (empty: the same, or not stored)."""
    return definition.changes(stored(cfg, table), p)


def refusal(cfg: TidewaterConfig, table: str, p: Pipeline, fix: str) -> str:
    """One line (the table, the change, ``fix``) when ``table`` holds windows of another definition, else ''."""
    changed = mismatch(cfg, table, p)
    if not changed:
        return ""
    return (f"the definition of {p.name} changed since {table} was computed ({'; '.join(changed)}); its windows "
            f"follow the old one, and new ones would be mixed in: {fix}, or restore the old definition")


def require_same(cfg: TidewaterConfig, table: str, p: Pipeline, fix: str) -> None:
    """Refuse (``refusal``'s line) when ``table`` holds windows of another definition."""
    line = refusal(cfg, table, p, fix)
    if line:
        raise TidewaterError(line)


def speed_refusal(cfg: TidewaterConfig, p: Pipeline, version: int) -> str:
    """Why speed version ``version`` of ``p`` must not run ('' when it may): its table holds windows of
    another definition. ``tidewater speed status`` shows it as the job's ``problem``."""
    return refusal(cfg, contracts.storage_table(p, version), p,
                   f"rebuild the speed layer under the new one with 'tidewater replay {p.name}' "
                   f"(the windows of version {version} stay served until the switch)")


def require_speed_same(cfg: TidewaterConfig, p: Pipeline, version: int) -> None:
    """Refuse to run speed version ``version`` of ``p`` (``speed_refusal``): checked by ``tidewater speed
    start`` before it spawns the job (no JVM), and by the job itself."""
    line = speed_refusal(cfg, p, version)
    if line:
        raise TidewaterError(line)


def record(spark: SparkSession, table: str, p: Pipeline) -> None:
    """Store ``p``'s definition on ``table`` (after a full recompute replaced its windows)."""
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{definition.PROPERTY}' = '{definition.encoded(p)}')")


def apart(cfg: TidewaterConfig, batch_table: str, speed_table: str, p: Pipeline) -> str:
    """Why ``batch_table`` and ``speed_table`` cannot be served together ('' when they can)."""
    return definition.apart(batch_table, stored(cfg, batch_table), speed_table, stored(cfg, speed_table), p)
