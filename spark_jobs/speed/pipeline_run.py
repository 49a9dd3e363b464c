"""One pipeline's speed queries in a running Spark session: the part of a speed job that is per pipeline.

``PipelineRun`` is shared by the two ways the speed layer runs (``speed.host`` in tidewater.yml):
``spark_jobs.speed.job`` (one Spark application per pipeline) runs one, the speed host
(``spark_jobs.speed.host``) one per pipeline in a single JVM. It holds the queries' exclusive locks
(``lock``: no query ever runs twice, whichever process starts it), recovers the progress rows a crash
lost and starts the queries (``start``), restarts a failed query from its checkpoint while its
``RestartBudget`` allows (``check``, one pass of the supervise loop), and stops gracefully (``stop``:
the queries, then this pipeline's background writes, progress recorder and locks).
"""

from __future__ import annotations

import fcntl
import sys
import time
from typing import Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import active_version
from spark_jobs.io.progress_recorder import ProgressRecorder
from spark_jobs.shared.locks import lock_path
from spark_jobs.shared.serving_view import refresh_view
from spark_jobs.speed.liveness import Liveness, liveness_file
from spark_jobs.speed.partials_table import drain_compactions
from spark_jobs.speed.queries import ALERTS, STREAM, runs_alerts, start_queries, stateless
from spark_jobs.speed.restart_budget import MAX_RESTARTS, RESTART_WINDOW_S, RestartBudget
from spark_jobs.speed.stream_progress_rows import drain

INGEST_VERSION = naming.INGEST_VERSION
# Pipelines' queries start one at a time, in every process (session, catalog tables, queries): three
# JVMs creating their tables in the Derby metastore at once deadlocked (the supervisor DAG starts every
# pipeline in parallel). Held around ``PipelineRun.start`` by a speed job and by the speed host.
STARTUP_LOCK = "speed-startup"
STARTUP_WAIT_SECONDS = 900.0


class QueryLocked(TidewaterError):
    """A query of the pipeline already runs elsewhere (its exclusive lock is held)."""


def query_checkpoints(cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str]) -> dict[str, tuple[int, Any]]:
    """query -> (version, checkpoint folder) of the queries ``which`` whose progress the listener
    records (the stateless ``stream`` query writes its own rows, with its data), and of the alerts
    query where this job runs it (its lineage is unversioned: recorded as ``INGEST_VERSION``)."""
    alerts = {ALERTS: (INGEST_VERSION, naming.alerts_checkpoint(cfg, p.name))} if runs_alerts(p, which) else {}
    if stateless(p):
        return alerts
    versions = {q: INGEST_VERSION if q == "ingest" else version for q in which if q != ALERTS}
    return {**{q: (v, naming.checkpoint_dir(cfg, p.name, q, v)) for q, v in versions.items()}, **alerts}


def acquire_locks(cfg: TidewaterConfig, pipeline: str, version: int, which: list[str]) -> list[Any]:
    """One copy of each query, whoever starts it: exclusive flocks, held until closed (a ``flock``
    belongs to its open file, so two threads of one process exclude each other too)."""
    handles: list[Any] = []
    for query in sorted(which):
        v = INGEST_VERSION if query == "ingest" else version
        path = lock_path(cfg, f"{pipeline}-{query}-v{v}")
        handle = open(path, "w")  # noqa: SIM115 - held open while the query runs
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            for held in handles:
                held.close()
            raise QueryLocked(f"query {query} v{v} of {pipeline} is already running (lock {path}); "
                              "not starting a second copy") from None
        handles.append(handle)
    return handles


def ensure_serving_view(spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str]) -> None:
    """Create ``serving.<p>`` when the active speed version starts and the view does not exist yet,
    so readers (and Kappa mode, which has no batch publish) find it from the first micro-batch."""
    view = p.tables.serving
    if "speed" in which and version == active_version(cfg, p.name) and not spark.catalog.tableExists(view):
        refresh_view(spark, cfg, p, speed_version=version)


def context_stopped(spark: Any) -> bool:
    """Whether the session's SparkContext was shut down (a Spark-internal failure stops it; every later
    call fails), as opposed to one failed query."""
    try:
        return bool(spark.sparkContext._jsc.sc().isStopped())
    except Exception:  # the JVM itself is gone
        return True


class PipelineRun:
    def __init__(self, cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str],
                 starting_offsets: str | None = None) -> None:
        self.cfg, self.p, self.version, self.which, self.starting_offsets = cfg, p, version, which, starting_offsets
        self.locks: list[Any] = []
        self.queries: dict[str, Any] = {}
        self.budgets: dict[str, RestartBudget] = {}
        self.spark: Any = None
        self.recorder: Any = None
        self.liveness: Any = None

    def lock(self) -> None:
        """Take the queries' exclusive locks (``QueryLocked`` when one runs elsewhere)."""
        self.locks = acquire_locks(self.cfg, self.p.name, self.version, self.which)

    def start(self, spark: Any) -> None:
        """Recover lost progress rows, start the queries and the serving view (after ``lock``)."""
        cfg, p, version, which = self.cfg, self.p, self.version, self.which
        self.spark = spark
        self.liveness = Liveness(spark, liveness_file(cfg, p.name, version))
        self.recorder = ProgressRecorder(spark, cfg, p.name, query_checkpoints(cfg, p, version, which))
        recovered = self.recorder.recover()  # before the queries run: batches a crash left without a row
        if recovered:
            print(f"speed: {p.name}: recovered {recovered} ops.stream_progress rows from the checkpoints", flush=True)
        self.recorder.start()
        self.queries = start_queries(spark, cfg, p, version, which, self.starting_offsets)
        self.budgets = {name: RestartBudget() for name in self.queries}
        ensure_serving_view(spark, cfg, p, version, which)
        self.liveness.write()

    def check(self) -> list[tuple[str, str]] | None:
        """One pass over the queries: None while they run (a failed one restarted from its checkpoint
        while its budget allows); [] when one was stopped from outside; [(query, error)] when one failed
        for good (budget spent, or the Spark context itself stopped)."""
        for name, query in list(self.queries.items()):
            if query.isActive:
                continue
            error = query.exception()
            if error is None:  # stopped from outside the loop
                return []
            if context_stopped(self.spark):  # no restart can succeed: Spark itself is down
                print(f"speed: the Spark context stopped under query {name} of {self.p.name} (its log's first "
                      "ERROR says why); its supervisor restarts it", file=sys.stderr, flush=True)
                return [(name, str(error))]
            budget = self.budgets[name]
            if not budget.allow():
                print(f"speed: query {name} of {self.p.name} failed {MAX_RESTARTS + 1} times within "
                      f"{RESTART_WINDOW_S:.0f} s; its supervisor restarts it", file=sys.stderr, flush=True)
                return [(name, str(error))]
            print(f"speed: query {name} of {self.p.name} failed; restarting it from its checkpoint ({budget.used()}/"
                  f"{MAX_RESTARTS} within {RESTART_WINDOW_S:.0f} s). The error:\n{str(error).strip()[:4000]}",
                  file=sys.stderr, flush=True)
            again = self.which if name == STREAM else [name]
            try:
                self.queries[name] = start_queries(self.spark, self.cfg, self.p, self.version, again,
                                                   self.starting_offsets)[name]
            except Exception as exc:  # the old query stays failed: the next pass tries again, counted
                print(f"speed: restart of query {name} of {self.p.name} failed ({str(exc).strip()[:300]}); "
                      "trying again", file=sys.stderr, flush=True)
                time.sleep(2)
        self.liveness.beat()
        return None

    def stop(self) -> None:
        """Stop the queries, wait for this pipeline's background writes, flush its progress, release
        its locks (safe after a partial ``start``)."""
        try:
            for q in self.queries.values():
                if q.isActive:
                    q.stop()
            self.finish_background_writes()
            if self.recorder is not None:
                self.recorder.stop()
        finally:
            for lock in self.locks:
                lock.close()
            self.locks = []

    def finish_background_writes(self) -> None:
        """Wait for the last micro-batch's ``ops.stream_progress`` append (one that fails stays pending
        and is written at the next start: ``speed.stream_progress_rows``) and for a partials compaction
        under way (one that fails leaves its rows to the next compaction): this pipeline's only."""
        checkpoints = naming.checkpoint_dir(self.cfg, self.p.name, STREAM, self.version).parent
        partials = naming.speed_partials_table(self.p.name, self.version)
        for wait, left in ((lambda: drain(checkpoints), "the last ops.stream_progress rows stay pending until the next start"),
                           (lambda: drain_compactions(partials),
                            "the partials compaction under way failed; the next one folds its rows")):
            try:
                wait()
            except Exception as exc:
                print(f"speed: {self.p.name}: {left} ({exc})", file=sys.stderr)
