"""What the soak samples while it runs, every ``SAMPLE_S`` seconds, and the micro-batches it reads at the end.

* memory (PSS) of every managed process of the stack, each with its descendants (the speed job's
  Python driver and its JVM; an Airflow component and its workers), with its PID so a restart shows;
  Airflow task runs apart (``soak_stack.tree_memory_mb``);
* consumer lag: the topic's end offsets minus the offsets the speed job's checkpoint committed
  (``benchmarks.s7_sustained.consumer_lag``);
* every ``READ_EVERY`` samples, one read of ``serving.<p>`` through the Thrift server, as a dashboard
  would (its seconds, or the error while the server is down).

Micro-batch durations come from ``ops.stream_progress`` at the end (one row per micro-batch of the
speed query, including the rows a killed job wrote at its next start).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC
from typing import Any

from benchmarks.s7_sustained import consumer_lag
from benchmarks.soak_stack import jdbc_query, process_names, tree_memory_mb
from infra.services.process import ManagedProcess
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.io.ops_reader import read_rows

SAMPLE_S = 10.0
READ_EVERY = 3


class Sampler(threading.Thread):
    def __init__(self, cfg: TidewaterConfig, p: Pipeline, t0: float) -> None:
        super().__init__(daemon=True, name="soak-sampler")
        self.cfg, self.p, self.t0 = cfg, p, t0
        self.stopping = threading.Event()
        self.samples: list[dict[str, Any]] = []

    def run(self) -> None:
        tick = 0
        while not self.stopping.wait(max(0.0, self.t0 + (tick + 1) * SAMPLE_S - time.time())):
            tick += 1
            try:
                self.samples.append(self.sample(read=tick % READ_EVERY == 0))
            except Exception as exc:  # a sample lost is recorded, the soak goes on
                self.samples.append({"t": round(time.time() - self.t0, 1), "error": f"{type(exc).__name__}: {exc}"[:200]})

    def sample(self, read: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"t": round(time.time() - self.t0, 1), "pss_mb": {}, "task_runs_mb": {}, "pid": {}}
        for name in process_names(self.cfg):
            pid = ManagedProcess(name, naming.run_dir(self.cfg), naming.logs_dir(self.cfg)).pid()
            memory = tree_memory_mb(pid) if pid else None
            if memory is not None:
                out["pss_mb"][name], out["task_runs_mb"][name], out["pid"][name] = *memory, pid
        try:
            out["lag"] = consumer_lag(self.cfg, self.p.topic)
        except Exception as exc:  # e.g. the broker the admin client asked was just killed
            out["lag_error"] = type(exc).__name__
        if read:
            out["serving_read"] = self.read_serving()
        return out

    def read_serving(self) -> dict[str, Any]:
        started = time.monotonic()
        try:
            jdbc_query(self.cfg, f"SELECT count(*), sum(event_count) FROM serving.{self.p.name}")
            return {"ok": True, "s": round(time.monotonic() - started, 2)}
        except Exception as exc:
            return {"ok": False, "error": type(exc).__name__}

    def finish(self) -> list[dict[str, Any]]:
        self.stopping.set()
        self.join(60)
        return self.samples


def micro_batches(cfg: TidewaterConfig, p: Pipeline, t0: float) -> list[tuple[float, float, int]]:
    """(seconds after ``t0``, duration s, input rows) of every speed micro-batch with input, in time order."""
    out = []
    for r in read_rows(cfg, "ops.stream_progress"):
        if r["pipeline"] == p.name and r["query"] == "speed" and r["input_rows"] and r["batch_time"]:
            at = r["batch_time"].replace(tzinfo=r["batch_time"].tzinfo or UTC).timestamp()
            out.append((round(at - t0, 1), r["batch_duration_ms"] / 1000.0, int(r["input_rows"])))
    return sorted(out)
