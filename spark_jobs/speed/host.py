"""The shared speed host (``speed.host: shared``): every pipeline's speed queries in ONE Spark application.

One long-running process (``python -m spark_jobs.speed.host``, started detached by
``spark_jobs.speed.control.start_speed``) holds one Spark session with FAIR scheduling and reconciles
the pipelines it runs with the wanted set (``speed.host_state``: ``tidewater speed start/stop <p>``
write and remove its entries) every ``RECONCILE_EVERY_S``. Each pipeline runs on a thread of its own
(``Served``), in a session of its own (``spark.newSession()``: its own SQL settings and streaming
queries over the shared SparkContext), with its Spark jobs in a FAIR pool named after it
(``speed.host_pools``: each with the weight of the jobs' default pool, above the background work; set on
that thread before its queries start, which the queries' threads inherit; the writes a micro-batch
starts on threads of its own inherit it too: ``shared.background``). The per-pipeline part is
``speed.pipeline_run.PipelineRun``, the same as in a job of its own: the queries' locks, progress
recovery, restarts within the restart budget, a graceful stop. A pipeline whose queries fail for good
is marked ``failed`` with its error and left stopped (the others run on) until it is started again;
each keeps its own checkpoints, so exactly-once is the same as with one job per pipeline. SIGTERM
stops every pipeline gracefully, then the host.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

from infra.spark_session import bound_session, get_spark
from lakehouse.config import TidewaterConfig, load_config
from lakehouse.pipeline import declared_pipelines, load_pipeline
from spark_jobs.shared.background import POOL_PROPERTY
from spark_jobs.shared.locks import exclusive
from spark_jobs.speed.host_pools import write_pools
from spark_jobs.speed.host_state import HOST_PROCESS, Wanted, host_dir, wanted, write_status
from spark_jobs.speed.pipeline_run import STARTUP_LOCK, STARTUP_WAIT_SECONDS, PipelineRun

RECONCILE_EVERY_S = 0.5
SUPERVISE_EVERY_S = 0.5
STOP_WAIT_S = 85.0  # below the 90 s after which ``stop_speed`` kills the host


def one_line(text: str) -> str:
    """The first non-empty line of an error (a JVM error's first line names it; its stack follows)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else "unknown error")[:500]


class Served:
    """One pipeline's thread in the host: start its queries, supervise them, stop them on ``stop()``."""

    def __init__(self, root: Any, cfg: TidewaterConfig, w: Wanted) -> None:
        self.root, self.cfg, self.w = root, cfg, w
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, name=f"speed-{w.pipeline}", daemon=True)
        self.thread.start()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.stopping.set()

    def _serve(self) -> None:
        cfg, w = self.cfg, self.w
        write_status(cfg, w, "starting")
        failed: list[tuple[str, str]] | None = None
        run: PipelineRun | None = None
        try:
            p = load_pipeline(w.pipeline, cfg.pipelines)
            run = PipelineRun(cfg, p, w.version, w.which, w.starting_offsets)
            run.lock()
            session = self.root.newSession()
            session.sparkContext.setLocalProperty(POOL_PROPERTY, w.pipeline)  # this thread's jobs, and its queries'
            with bound_session(session), exclusive(cfg, STARTUP_LOCK, STARTUP_WAIT_SECONDS):
                run.start(session)
            write_status(cfg, w, "running")
            print(f"speed host: {w.pipeline} v{w.version} running queries {sorted(run.queries)} "
                  f"(FAIR pool {w.pipeline})", flush=True)
            while not self.stopping.is_set() and failed is None:
                failed = run.check()
                self.stopping.wait(SUPERVISE_EVERY_S)
        except Exception as exc:  # a refusal or a failed start: this pipeline only
            print(f"speed host: {w.pipeline} did not start: {str(exc).strip()[:4000]}", file=sys.stderr, flush=True)
            failed = [("start", str(exc))]
        finally:
            if run is not None:
                try:
                    run.stop()
                except Exception as exc:  # the status must still be written: 'speed stop' waits for it
                    print(f"speed host: {w.pipeline}: graceful stop failed: {one_line(str(exc))}", file=sys.stderr,
                          flush=True)
        if failed:
            error = "; ".join(one_line(err) if name == "start" else f"query {name}: {one_line(err)}"
                              for name, err in failed)
            write_status(cfg, w, "failed", error)
            print(f"speed host: {w.pipeline} failed: {error}", file=sys.stderr, flush=True)
        else:
            write_status(cfg, w, "stopped")
            print(f"speed host: {w.pipeline} v{w.version} stopped", flush=True)


def reconcile(root: Any, cfg: TidewaterConfig, served: dict[str, Served]) -> None:
    """Start what is wanted and not served; stop what is served and no longer wanted (or wanted again
    with a new token: restarted). A pipeline that failed stays stopped until it is wanted again."""
    desired = wanted(cfg)
    for name, one in list(served.items()):
        again = desired.get(name)
        if again is None or again.token != one.w.token:
            one.stop()
            if not one.alive():
                del served[name]
    for name, w in desired.items():
        if name not in served:
            served[name] = Served(root, cfg, w)


def run_host(cfg: TidewaterConfig) -> None:
    stopping = {"flag": False}

    def _on_term(signum: int, frame: Any) -> None:
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    pools = write_pools(host_dir(cfg), declared_pipelines())
    root = get_spark(cfg, "tidewater-speed-host", extra={"spark.scheduler.allocation.file": str(pools)})
    served: dict[str, Served] = {}
    print(f"speed host: running ({HOST_PROCESS}, Spark {root.sparkContext.master}, "
          f"scheduler {root.sparkContext.getConf().get('spark.scheduler.mode')})", flush=True)
    try:
        while not stopping["flag"]:
            reconcile(root, cfg, served)
            time.sleep(RECONCILE_EVERY_S)
    finally:
        for one in served.values():
            one.stop()
        deadline = time.monotonic() + STOP_WAIT_S
        for one in served.values():
            one.thread.join(timeout=max(0.0, deadline - time.monotonic()))
    print("speed host: stopped", flush=True)


def main() -> None:
    run_host(load_config())


if __name__ == "__main__":
    main()
