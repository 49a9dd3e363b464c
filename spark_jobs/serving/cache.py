"""The Thrift server's serving cache: each ``serving.<p>`` held in the server's memory, refreshed when
the view or a Delta table behind it changes.

Why: a JDBC query of the view paid, per query, Delta's snapshot and file-skipping jobs for each table
behind it plus the speed fold's shuffle: about 0.4 s of server time on 2 cores shared with the speed
job, so 8 clients queued for seconds. Read from Spark's in-memory columnar cache, the same
query is one small job. The cache is built once per change of the tables, not once per query.

How: the keeper, the main loop of the server's own driver (``spark_jobs.serving.thrift_service``), looks every
second at each view's stored text (one metastore call) and at the newest commit of each Delta table the
view reads (``delta.`<loc>```, from the ``_delta_log`` folder: no Spark job). The data lives in memory
behind a global temporary view that the server's parser sends ``serving.<p>`` reads to
(``spark_jobs.serving.memory``). A new text (a publish, a replay switch) is built at once and swapped in
without a gap: until it is, the old data answers (the state before the change, whole). It is not dropped
first: reads would go to the metastore's view meanwhile and pay its full recompute. New table versions
are taken in at most every ``thrift.max_staleness_seconds`` (a build costs about a second of CPU), also
without a gap.

Guarantees: a JDBC answer from ``serving.<p>`` is one consistent state, at most the interval plus one
rebuild behind the tables (``wait_fresh`` waits for the cache to catch up); a publish or replay switch
stays atomic (the old state or the new, never a mix). Any failure drops the in-memory view, so queries
read the tables (fresh, slower) until a rebuild works; a keeper that cannot even drop it ends the server
(fail closed). Only this server's memory holds the cache: jobs and ``tidewater sql`` read the tables.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.services.thrift_server import read_cache_state
from spark_jobs.io.delta_io import latest_version
from spark_jobs.serving.memory import DELTA_LOCATION, MemoryViews

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS = 1.0  # how often the keeper looks at the views and their tables


def delta_locations(view_text: str) -> list[str]:
    """The locations of the Delta tables a view reads by location (``serving.delta_relation``)."""
    return sorted({m.replace("``", "`") for m in DELTA_LOCATION.findall(view_text)})


def local_path(location: str) -> Path:
    return Path(location.removeprefix("file://").removeprefix("file:"))


class ServingCache:
    """Keeps ``views`` in ``spark``'s memory (``MemoryViews``); ``state`` records what is held (JSON)."""

    def __init__(self, spark: SparkSession, views: list[str], state: Path, every: float,
                 log: Callable[[str], None] = print) -> None:
        self.spark, self.views, self.state, self.every, self.log = spark, views, state, every, log
        self.built_at: dict[str, float] = {}
        self.cached: dict[str, tuple[str, dict[str, int]]] = {}  # view -> (text, versions) it was built from
        self.known: dict[str, int] = {}
        self.facts: dict[str, dict[str, Any]] = {}
        self.memory = MemoryViews(spark)

    def stored_text(self, view: str) -> str | None:
        """The view's stored SELECT, None when it does not exist: one metastore call, no SQL statement."""
        jvm = self.spark._jvm
        assert jvm is not None
        db, name = view.split(".")
        ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Option.apply(db))
        catalog = self.spark._jsparkSession.sessionState().catalog()
        if not catalog.tableExists(ident):
            return None
        text = catalog.getTableMetadata(ident).viewText()
        return None if text.isEmpty() else str(text.get())

    def fingerprint(self, view: str) -> tuple[str, dict[str, int]] | None:
        text = self.stored_text(view)
        if text is None:
            return None
        versions = {}
        for location in delta_locations(text):
            self.known[location] = latest_version(local_path(location), self.known.get(location, -1))
            versions[location] = self.known[location]
        return text, versions

    def check(self) -> None:
        """One round: rebuild each view whose fingerprint moved since its entry was built."""
        for view in self.views:
            try:
                seen = self.fingerprint(view)
                if seen is None:
                    self.drop(view)
                elif self.cached.get(view) != seen and self.due(view, seen):
                    self.rebuild(view, seen)
            except Exception as exc:  # noqa: BLE001 - a metastore hiccup: uncached (fresh) reads until it passes
                self.drop(view, f"{type(exc).__name__}: {exc}"[:300])
        self.write_state()

    def drop(self, view: str, error: str = "") -> None:
        """Reads of ``view`` go to its tables. If even this fails, the keeper fails (and the server)."""
        if self.cached.pop(view, None) is not None or error:
            self.memory.drop(view)
        self.facts.pop(view, None)
        if error:
            self.facts[view] = {"cached": False, "error": error}
            self.log(f"serving cache: {view} not cached, reads go to the tables: {error}")

    def due(self, view: str, seen: tuple[str, dict[str, int]]) -> bool:
        """A new view text at once (a publish, a replay switch); new table versions at most every
        ``every`` seconds from the previous rebuild's start (each costs about a second of CPU)."""
        before = self.cached.get(view)
        return before is None or before[0] != seen[0] or time.monotonic() - self.built_at.get(view, 0.0) >= self.every

    def rebuild(self, view: str, seen: tuple[str, dict[str, int]]) -> None:
        started = self.built_at[view] = time.monotonic()
        before = self.cached.get(view)
        # new table versions or a new text (a publish, a replay switch): the old data, one consistent state,
        # answers until the new is in. Never drop it first: reads would go to the metastore's view and pay
        # its full recompute
        how = "cached" if before is None else "swapped" if before[0] == seen[0] else "swapped text"
        self.memory.put(view, seen[0])
        self.cached[view] = seen
        self.facts[view] = {"cached": True, "text_sha1": text_sha1(seen[0]), "versions": seen[1], "how": how,
                            "built_at": datetime.now(UTC).isoformat(), "build_seconds": round(time.monotonic() - started, 3)}
        self.log(f"serving cache: {view} {how} (text {self.facts[view]['text_sha1'][:10]}, versions "
                 f"{ {local_path(k).name: v for k, v in seen[1].items()} }, {self.facts[view]['build_seconds']} s)")

    def write_state(self) -> None:
        tmp = self.state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"checked_at": datetime.now(UTC).isoformat(), "views": self.facts}))
        tmp.replace(self.state)

    def run(self, poll: float = POLL_SECONDS) -> None:
        while True:
            started = time.monotonic()
            self.check()
            time.sleep(max(0.0, poll - (time.monotonic() - started)))


def text_sha1(view_text: str) -> str:
    return hashlib.sha1(view_text.strip().encode()).hexdigest()


def is_fresh(state: dict[str, Any], view: str, view_text: str, versions: dict[str, int]) -> bool:
    """Whether the keeper's entry for ``view`` was built from this text and (at least) these versions."""
    facts = state.get("views", {}).get(view)
    if not facts or not facts.get("cached"):
        return True  # not cached: queries read the tables themselves
    built = facts.get("versions", {})
    return facts.get("text_sha1") == text_sha1(view_text) and all(built.get(k, -1) >= v for k, v in versions.items())


def wait_fresh(state: Path, view: str, view_text: str, timeout: float = 60) -> bool:
    """Wait until the server's cached ``view`` (whose text is now ``view_text``) holds the tables'
    current versions, e.g. before comparing JDBC answers with what a job just wrote. True when it does."""
    deadline = time.monotonic() + timeout
    while True:
        current = {loc: latest_version(local_path(loc)) for loc in delta_locations(view_text)}
        if is_fresh(read_cache_state(state), view, view_text, current):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
