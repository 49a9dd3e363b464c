"""A function run on a thread of its own inside a ``foreachBatch`` call: Spark runs the jobs of
several driver threads side by side, so independent writes of one micro-batch overlap."""

from __future__ import annotations

import threading
import time
from typing import Any

BACKGROUND_POOL = "background"  # the FAIR scheduler pool of work that may wait (infra/fairscheduler.xml)
POOL_PROPERTY = "spark.scheduler.pool"  # the thread-local Spark property that names a thread's pool


class Background:
    """Run ``fn(*args)`` on a thread of its own (Spark runs jobs of several threads side by side);
    ``join`` waits, re-raises its error and returns its seconds. ``pool``: the FAIR scheduler pool
    of the thread's Spark jobs (None: the pool of the thread that starts it, e.g. a pipeline's pool in
    the speed host, ``spark_jobs.speed.host``)."""

    def __init__(self, fn: Any, *args: Any, pool: str | None = None) -> None:
        pool = pool or callers_pool()
        self.error: BaseException | None = None
        self.started, self.seconds = time.monotonic(), 0.0
        self.thread = threading.Thread(target=self._run, args=(fn, pool, *args), daemon=True)
        self.thread.start()

    def _run(self, fn: Any, pool: str | None, *args: Any) -> None:
        try:
            if pool is not None:
                from pyspark import SparkContext

                context = SparkContext._active_spark_context
                if context is not None:  # a thread-local property: this thread's jobs only
                    context.setLocalProperty(POOL_PROPERTY, pool)
            fn(*args)
        except BaseException as exc:  # handed to the joining thread
            self.error = exc
        self.seconds = time.monotonic() - self.started

    def join(self) -> float:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.seconds


def callers_pool() -> str | None:
    """The FAIR scheduler pool this thread's Spark jobs run in (None: the default pool)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return context.getLocalProperty(POOL_PROPERTY) if context is not None else None


class Inflight:
    """The ``Background`` runs of one kind under way in this process (e.g. every stream's progress
    appends), all in the background pool: ``start`` one, see whether any is ``busy``, ``drain``
    (wait for all, then re-raise the first failure)."""

    def __init__(self) -> None:
        self.runs: list[Background] = []

    def start(self, fn: Any, *args: Any) -> Background:
        run = Background(fn, *args, pool=BACKGROUND_POOL)
        self.runs.append(run)
        return run

    def busy(self) -> bool:
        return any(run.thread.is_alive() for run in self.runs)

    def drain(self) -> float:
        """Wait for every run; returns their seconds, or raises the first failure after all ended."""
        seconds, error = 0.0, None
        while self.runs:
            run = self.runs.pop(0)
            try:
                seconds += run.join()
            except BaseException as exc:
                error = error or exc
        if error is not None:
            raise error
        return seconds
