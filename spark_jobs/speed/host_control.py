"""Job control of a pipeline in the shared speed host (``speed.host: shared``; ``spark_jobs.speed.control``
comes here for a pipeline's main job, never for a named one such as a replay, which keeps its own process).

``start_in_host`` asks the host for the pipeline (``speed.host_state.want``), starts the host when it
does not run, and waits until the host reports the pipeline running (or its one-line refusal);
``stop_in_host`` withdraws the pipeline and waits until the host stopped its queries; ``in_host``
reads what the running host reports for one pipeline.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from infra.services.process import ManagedProcess
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.speed import host_state

POLL_SECONDS = 0.25
STOP_WAIT_SECONDS = 90.0


def uses_host(cfg: TidewaterConfig, name: str | None) -> bool:
    """Whether a pipeline's job named ``name`` (None: its main job) runs in the shared host."""
    return cfg.speed.host == "shared" and name is None


def host_process(cfg: TidewaterConfig) -> Any:
    return ManagedProcess(host_state.HOST_PROCESS, naming.run_dir(cfg), naming.logs_dir(cfg))


def in_host(cfg: TidewaterConfig, pipeline: str) -> dict[str, Any] | None:
    """The running host's status of ``pipeline`` (``state``, ``error``, ``version``, ``at``, ``host_pid``), or None."""
    return host_state.read_status(cfg, pipeline, host_process(cfg).pid())


def running_in_host(cfg: TidewaterConfig, pipeline: str) -> bool:
    status = in_host(cfg, pipeline)
    return status is not None and status["state"] == "running"


def start_in_host(cfg: TidewaterConfig, p: Pipeline, version: int, queries: str, starting_offsets: str | None,
                  wait: float) -> int:
    """The host's PID once it runs ``p``'s queries; ``TidewaterError`` with its refusal when it did not start them."""
    proc = host_process(cfg)
    w = host_state.want(cfg, p.name, version, queries, starting_offsets)
    spawned, mark = False, proc.log_size()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        pid = proc.pid()
        if pid is None:
            if spawned:
                raise TidewaterError(f"speed: the speed host exited while starting {p.name}; log {proc.log_file}:\n"
                                     f"{proc.log_since(mark)[-3000:]}")
            proc.start([sys.executable, "-m", "spark_jobs.speed.host"], nice=cfg.spark.speed_nice,
                       marker="spark_jobs.speed.host")
            spawned = True
            continue
        status = host_state.read_status(cfg, p.name, pid)
        if status is not None and status["token"] == w.token:
            if status["state"] == "running":
                return pid
            if status["state"] == "failed":
                if (host_state.wanted_one(cfg, p.name) or w).token == w.token:
                    host_state.unwant(cfg, p.name)  # a later host must not retry what was refused
                raise TidewaterError(f"speed: {status['error']}")
        time.sleep(POLL_SECONDS)
    return int(proc.pid() or 0)


def stop_in_host(cfg: TidewaterConfig, p: Pipeline, timeout: float = STOP_WAIT_SECONDS) -> bool:
    """Withdraw ``p`` from the host and wait until its queries stopped; True if they ran."""
    was_running = running_in_host(cfg, p.name)
    host_state.unwant(cfg, p.name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = in_host(cfg, p.name)
        if status is None or status["state"] in ("stopped", "failed"):
            return was_running
        time.sleep(POLL_SECONDS)
    raise TidewaterError(f"speed: the speed host did not stop {p.name} within {timeout:.0f} s; "
                         f"log {host_process(cfg).log_file}")
