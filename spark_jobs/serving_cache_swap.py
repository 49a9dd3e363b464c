"""Replace the data of a cached view without a gap: Spark's own refresh (``REFRESH TABLE``) first drops
the entry's data and rebuilds it lazily, so every query in between waits for the rebuild or reads the
tables itself (about 1 s per change of the speed table, stop 29).

Instead: cache the view's SELECT once more in a form whose plan matches no cached entry (each Delta
table read through a ``WHERE true`` subquery), so it is computed from the tables' current versions;
then point the view's entry at that data in one write of the cache manager's entry list, and free the
old data one round later (a query that started on it finishes on it). The entry keeps the view's own
plan, so every session's queries of the view go on matching it.

The entry list is a private field of Spark's ``CacheManager`` (pyspark 4.1.1, pinned); it is written
by reflection. Spark changes it under its own lock, which Python cannot take: the only other writers
in the Thrift server are cache statements a JDBC user runs, which the keeper's next round repairs
(a dropped entry is cached again). If the field is not there, ``swap_in_fresh`` raises and the keeper
falls back to uncached reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_jobs.serving_cache import DELTA_LOCATION

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_retired: list[Any] = []  # builders of replaced data, freed at the next swap


def uncached_variant(view_text: str) -> str:
    """The view's SELECT with each Delta table read through ``(SELECT * FROM <t> WHERE true)``: the
    same rows, a plan that no cached entry matches (Spark compares analyzed plans, where the filter
    is still there)."""
    return DELTA_LOCATION.sub(lambda m: f"(SELECT * FROM {m.group(0)} WHERE true)", view_text)


def _entries_field(spark: SparkSession) -> tuple[Any, Any]:
    jvm = spark._jvm
    assert jvm is not None
    manager = spark._jsparkSession.sharedState().cacheManager()
    field = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.CacheManager").getDeclaredField("cachedData")
    field.setAccessible(True)
    return manager, field


def swap_in_fresh(spark: SparkSession, view: str, view_text: str) -> str:
    """Give the cached ``view`` (whose stored SELECT is ``view_text``) its tables' current data."""
    jvm = spark._jvm
    assert jvm is not None
    for builder in _retired:
        builder.clearCache(False)
    _retired.clear()
    manager, field = _entries_field(spark)
    current = manager.lookupCachedData(spark.table(view)._jdf)
    if current.isEmpty():
        raise LookupError(f"{view} has no cache entry to refresh")
    old = current.get()
    fresh_df = spark.sql(uncached_variant(view_text)).coalesce(1)  # serving rows are few: one task per query
    fresh_df.persist()
    try:
        fresh_df.count()  # computed now, from the tables
        fresh = manager.lookupCachedData(fresh_df._jdf).get()
        replacement = jvm.org.apache.spark.sql.execution.CachedData.apply(old.plan(), fresh.cachedRepresentation())
        entries = field.get(manager)
        keep = jvm.java.util.ArrayList()
        keep.add(replacement)
        for i in range(entries.length()):
            entry = entries.apply(i)
            if not (entry.equals(old) or entry.equals(fresh)):
                keep.add(entry)
    except Exception:
        fresh_df.unpersist()
        raise
    field.set(manager, jvm.scala.jdk.javaapi.CollectionConverters.asScala(keep).toIndexedSeq())
    _retired.append(old.cachedRepresentation().cacheBuilder())
    return "swapped"
