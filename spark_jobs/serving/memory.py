"""The serving cache's data: each ``serving.<p>`` as an in-memory columnar relation behind a global
temporary view, ``<global temp db>.tidewater_serving__<p>``. The Thrift server's SQL parser sends reads
of ``serving.<p>`` to that view while it exists (``infra/java/io/tidewater/spark/ServingParser.java``).

Why a view of its own rather than ``CACHE TABLE serving.<p>``: a query of the metastore's view pays,
even when its data is cached, a metastore lookup (behind the one lock every JDBC session shares), a
parse of the view's text and an analysis that loads each Delta table's snapshot: 80 of the 150-200 ms
of a cached point query. The temporary view holds the relation itself: nothing to look up.

Replacing the data leaves no gap: the new relation is built and filled from the tables first, then
the temporary view is replaced (one step, under the global view manager's lock), and the old data is
freed one round later (a query that started on it finishes on it; if it were freed under a query,
that query would recompute it from the same table versions: slower, never different). No entry of
Spark's cache manager is involved, so nothing a JDBC user caches or uncaches interferes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REDIRECT_PREFIX = "tidewater_serving__"  # ServingParser.PREFIX
DELTA_LOCATION = re.compile(r"delta\.`((?:[^`]|``)+)`")


def redirect_name(view: str) -> str:
    """``serving.<p>`` -> the name of its global temporary view (``ServingParser`` derives the same)."""
    return REDIRECT_PREFIX + view.split(".")[-1].lower()


def uncached_variant(view_text: str) -> str:
    """The view's SELECT with each Delta table read through ``(SELECT * FROM <t> WHERE true)``: the same
    rows, a plan that no entry of Spark's cache manager matches (one a JDBC user cached, say), so a
    build always reads the tables' current versions."""
    return DELTA_LOCATION.sub(lambda m: f"(SELECT * FROM {m.group(0)} WHERE true)", view_text)


class MemoryViews:
    """The in-memory data of each view and the global temporary views over it."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.current: dict[str, Any] = {}  # view -> its InMemoryRelation (JVM)
        self.retired: list[Any] = []  # relations replaced or dropped, freed at the next put or drop

    def put(self, view: str, view_text: str) -> None:
        """Build ``view``'s rows from its SELECT now, then point its temporary view at them."""
        from pyspark.sql import DataFrame

        self._free_retired()
        jvm, jspark = self.spark._jvm, self.spark._jsparkSession
        assert jvm is not None
        rows = self.spark.sql(uncached_variant(view_text)).coalesce(1)  # serving rows are few: one task per query
        relations = getattr(jvm.org.apache.spark.sql.execution.columnar, "InMemoryRelation$")
        relation = getattr(relations, "MODULE$").apply(jvm.org.apache.spark.storage.StorageLevel.MEMORY_AND_DISK(),
                                                      rows._jdf.queryExecution(), jvm.scala.Some(view))
        in_memory = DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(jspark, relation), self.spark)
        try:
            in_memory.count()  # filled now, from the tables
            in_memory.createOrReplaceGlobalTempView(redirect_name(view))
        except Exception:
            relation.cacheBuilder().clearCache(True)
            raise
        self._retire(self.current.pop(view, None))
        self.current[view] = relation

    def drop(self, view: str) -> None:
        """Reads of ``view`` go to the metastore's view again (its tables, fresh)."""
        self.spark.catalog.dropGlobalTempView(redirect_name(view))
        self._retire(self.current.pop(view, None))
        self._free_retired()

    def _retire(self, relation: Any) -> None:
        if relation is not None:
            self.retired.append(relation)

    def _free_retired(self) -> None:
        while self.retired:
            self.retired.pop().cacheBuilder().clearCache(False)
