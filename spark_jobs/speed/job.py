"""Speed layer entry point: one long-running Spark application per pipeline (and query version).

The queries (``spark_jobs.speed.queries``): for tumbling and sliding windows ONE stateless ``stream``
query (roles ``ingest`` and ``speed``: bronze, quarantine and the speed table from one read of Kafka);
for session windows an ``ingest`` and a stateful ``speed`` query. ``--version`` is the speed version;
a Kappa replay runs only the ``speed`` role, from the earliest offsets, into a new version. Every role
holds an exclusive lock, so none ever runs twice. A failed query is restarted from its checkpoint while
its ``restart_budget`` allows (a few restarts per ten minutes). SIGTERM stops gracefully.

Run: ``python -m spark_jobs.speed.job <pipeline> [--version N] [--queries ingest,speed]``.
"""

from __future__ import annotations

import argparse
import fcntl
import signal
import sys
import time
from typing import Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig, load_config
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline, load_pipeline
from spark_jobs.speed.control import REFUSAL
from spark_jobs.speed.queries import ALERTS, STREAM, runs_alerts, start_queries, stateless
from spark_jobs.speed.restart_budget import MAX_RESTARTS, RESTART_WINDOW_S, RestartBudget

__all__ = ["start_queries", "run", "main"]

INGEST_VERSION = naming.INGEST_VERSION
# Speed jobs start one at a time (session, catalog tables, queries): three JVMs creating their tables
# in the Derby metastore at once deadlocked (the supervisor DAG starts every pipeline in parallel).
STARTUP_WAIT_SECONDS = 900.0


def ensure_serving_view(spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str]) -> None:
    """Create ``serving.<p>`` when the active speed version starts and the view does not exist yet,
    so readers (and Kappa mode, which has no batch publish) find it from the first micro-batch."""
    from lakehouse.speed_versions import active_version
    from spark_jobs.shared.serving_view import refresh_view

    view = naming.table("serving", p.name)
    if "speed" in which and version == active_version(cfg, p.name) and not spark.catalog.tableExists(view):
        refresh_view(spark, cfg, p, speed_version=version)


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
    """One copy of each query, whoever starts it: exclusive flocks held for the process's life."""
    from spark_jobs.shared.locks import lock_path

    handles = []
    for query in sorted(which):
        v = INGEST_VERSION if query == "ingest" else version
        path = lock_path(cfg, f"{pipeline}-{query}-v{v}")
        handle = open(path, "w")  # noqa: SIM115 - held open for the process lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"speed: query {query} v{v} of {pipeline} is already running (lock {path}); "
                  "not starting a second copy", file=sys.stderr)
            sys.exit(3)
        handles.append(handle)
    return handles


def supervise(spark: Any, cfg: TidewaterConfig, p: Pipeline, version: int, queries: dict[str, Any], which: list[str],
              starting_offsets: str | None, stopping: dict[str, bool], run_seconds: float | None,
              liveness: Any) -> list[tuple[str, str]]:
    """Wait while the queries run (telling ``liveness`` when their Spark work advances); restart a
    failed query from its checkpoint while its ``RestartBudget`` allows. Returns the queries that
    failed for good, with their errors."""
    started, budgets = time.monotonic(), {name: RestartBudget() for name in queries}
    while not stopping["flag"]:
        if run_seconds is not None and time.monotonic() - started > run_seconds:
            return []
        for name, query in list(queries.items()):
            if query.isActive:
                continue
            error = query.exception()
            if error is None:  # stopped from outside the loop
                return []
            if context_stopped(spark):  # no restart can succeed: Spark itself is down
                print(f"speed: the Spark context stopped under query {name} (its log's first ERROR says why); "
                      "the job exits (its supervisor restarts it)", file=sys.stderr, flush=True)
                return [(name, str(error))]
            if not budgets[name].allow():
                print(f"speed: query {name} failed {MAX_RESTARTS + 1} times within {RESTART_WINDOW_S:.0f} s; "
                      "the job exits (its supervisor restarts it)", file=sys.stderr, flush=True)
                return [(name, str(error))]
            print(f"speed: query {name} failed; restarting it from its checkpoint ({budgets[name].used()}/"
                  f"{MAX_RESTARTS} within {RESTART_WINDOW_S:.0f} s). The error:\n{str(error).strip()[:4000]}",
                  file=sys.stderr, flush=True)
            again = which if name == STREAM else [name]
            try:
                queries[name] = start_queries(spark, cfg, p, version, again, starting_offsets)[name]
            except Exception as exc:  # the old query stays failed: the next pass tries again, counted
                print(f"speed: restart of query {name} failed ({str(exc).strip()[:300]}); trying again",
                      file=sys.stderr, flush=True)
                time.sleep(2)
        liveness.beat()
        time.sleep(0.5)
    return []


def context_stopped(spark: Any) -> bool:
    """Whether the job's SparkContext was shut down (a Spark-internal failure stops it; every later
    call fails), as opposed to one failed query."""
    try:
        return bool(spark.sparkContext._jsc.sc().isStopped())
    except Exception:  # the JVM itself is gone
        return True


def run(cfg: TidewaterConfig, p: Pipeline, version: int, which: list[str], starting_offsets: str | None = None,
        run_seconds: float | None = None) -> None:
    from infra.spark_session import get_spark
    from spark_jobs.io.progress_recorder import ProgressRecorder
    from spark_jobs.shared.locks import exclusive
    from spark_jobs.speed.liveness import Liveness, liveness_file

    locks = acquire_locks(cfg, p.name, version, which)
    stopping = {"flag": False}

    def _on_term(signum: int, frame: Any) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    with exclusive(cfg, "speed-startup", STARTUP_WAIT_SECONDS):  # see STARTUP_WAIT_SECONDS
        spark = get_spark(cfg, f"tidewater-speed-{p.name}-v{version}")
        liveness = Liveness(spark, liveness_file(cfg, p.name, version))
        recorder = ProgressRecorder(spark, cfg, p.name, query_checkpoints(cfg, p, version, which))
        recovered = recorder.recover()  # before the queries run: batches a crash left without a row
        if recovered:
            print(f"speed: recovered {recovered} ops.stream_progress rows from the checkpoints", flush=True)
        recorder.start()
        queries = start_queries(spark, cfg, p, version, which, starting_offsets)
        ensure_serving_view(spark, cfg, p, version, which)
    print(f"speed: {p.name} v{version} running queries {sorted(queries)}", flush=True)
    liveness.write()
    try:
        failed = supervise(spark, cfg, p, version, queries, which, starting_offsets, stopping, run_seconds, liveness)
    finally:
        for q in queries.values():
            if q.isActive:
                q.stop()
        finish_background_writes()
        recorder.stop()
        for lock in locks:
            lock.close()
    if failed:
        for name, exc in failed:
            print(f"speed: query {name} failed: {exc}", file=sys.stderr)
        sys.exit(1)
    print(f"speed: {p.name} v{version} stopped", flush=True)


def finish_background_writes() -> None:
    """Wait for the last micro-batch's ``ops.stream_progress`` append (one that fails stays pending
    and is written at the next start: ``speed.stream_progress_rows``) and for a partials compaction
    under way (one that fails leaves its rows to the next compaction)."""
    from spark_jobs.speed.partials_table import drain_compactions
    from spark_jobs.speed.stream_progress_rows import drain

    for wait, left in ((drain, "the last ops.stream_progress rows stay pending until the next start"),
                       (drain_compactions, "the partials compaction under way failed; the next one folds its rows")):
        try:
            wait()
        except Exception as exc:
            print(f"speed: {left} ({exc})", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.speed.job")
    parser.add_argument("pipeline")
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--queries", default="ingest,speed")
    parser.add_argument("--starting-offsets", choices=["earliest", "latest"])
    parser.add_argument("--run-seconds", type=float)
    args = parser.parse_args(argv)
    cfg = load_config()
    p = load_pipeline(args.pipeline, cfg.pipelines)
    try:
        run(cfg, p, args.version, args.queries.split(","), args.starting_offsets, args.run_seconds)
    except TidewaterError as exc:  # a refusal: one line, which 'tidewater speed start' shows as its own
        print(f"{REFUSAL}{exc}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
