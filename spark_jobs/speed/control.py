"""Job control of the detached speed job: start, stop, status and consumer lag, per ``Pipeline``.

The one module that starts and stops ``python -m spark_jobs.speed.job`` processes (the CLI, replay,
maintenance, the demo and the tests all come here); with ``speed.host: shared``, a pipeline's main job
runs in the shared speed host instead (``speed.host_control``), and the same calls start, stop and
report it there. The active speed version is read from
``lakehouse.speed_versions``; the lag from ``ops.stream_progress`` (read without Spark) and Kafka.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import Any

from infra.jvm import require_java
from infra.services.log_evidence import job_evidence
from infra.services.process import ManagedProcess
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError, TidewaterError, TopicMissing
from lakehouse.pipeline import Pipeline
from lakehouse.progress_records import StreamProgress
from lakehouse.speed_versions import active_version
from spark_jobs.io.kafka_admin import offsets, require_log_append_time
from spark_jobs.io.ops_reader import latest_progress
from spark_jobs.shared import definition_guard
from spark_jobs.shared.locks import held_elsewhere, switch_lock_name
from spark_jobs.speed import host_control
from spark_jobs.speed.host_state import forget_all
from spark_jobs.speed.lag import lag_after, lag_records, topic_offsets
from spark_jobs.speed.liveness import last_advanced

REFUSAL = "tidewater: "  # how a speed job's log line starts that names why it refused to start
START_POLL_SECONDS = 0.25  # between two reads of a starting job's new log lines (a file read)
LAG_POLL_SECONDS = 0.5  # between two lag reads (ops.stream_progress and Kafka's offsets: about 0.15 s each)


def speed_process(cfg: TidewaterConfig, p: Pipeline, name: str | None = None) -> Any:
    """The pipeline's main job (ingest + active speed version), or another named job (a replay)."""
    return ManagedProcess(name or f"speed-{p.name}", naming.run_dir(cfg), naming.logs_dir(cfg))


def start_speed(cfg: TidewaterConfig, p: Pipeline, version: int | None = None, queries: str = "ingest,speed",
                starting_offsets: str | None = None, wait: float = 120.0, name: str | None = None) -> int:
    """Start the job detached (PID file + log). Idempotent: a running copy is left alone. The main job
    is refused while another process switches versions (a replay or rollback froze it on purpose)."""
    if name is None and held_elsewhere(cfg, switch_lock_name(p.name)):
        raise TidewaterError(f"speed: a replay or rollback of {p.name} is switching versions; it restarts the "
                             "main job itself when done (see 'tidewater speed status')")
    version = version or active_version(cfg, p.name)
    proc = speed_process(cfg, p, name)
    if host_control.uses_host(cfg, name):
        status = host_control.in_host(cfg, p.name)
        if status is not None and status["state"] == "running" and status["version"] == version:
            return int(status["host_pid"])
    elif proc.running():
        return int(proc.pid())

    require_java()  # here, not in the child: its one line would end up in a log tail
    require_topic(cfg, p)  # a job on a missing topic would idle with lag 0
    definition_guard.require_speed_same(cfg, p, version)  # read from the table's log: refused before a JVM starts
    if host_control.uses_host(cfg, name):
        return host_control.start_in_host(cfg, p, version, queries, starting_offsets, wait)
    argv = [sys.executable, "-m", "spark_jobs.speed.job", p.name, "--version", str(version), "--queries", queries]
    if starting_offsets:
        argv += ["--starting-offsets", starting_offsets]
    mark = proc.log_size()  # the log is appended across runs: look only at this start's lines
    pid = proc.start(argv, nice=cfg.spark.speed_nice)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if "running queries" in proc.log_since(mark):
            return pid
        if not proc.running():
            refused = [line[len(REFUSAL):] for line in proc.log_since(mark).splitlines() if line.startswith(REFUSAL)]
            if refused:  # the job's own one-line refusal (``spark_jobs.speed.job.main``)
                raise TidewaterError(f"speed: {refused[-1]}")
            raise TidewaterError(f"speed: {p.name} exited during start; log {proc.log_file}:\n{proc.tail(15)}")
        time.sleep(START_POLL_SECONDS)
    return pid


def stop_speed(cfg: TidewaterConfig, p: Pipeline, name: str | None = None) -> bool:
    """Graceful stop, SIGKILL after 90 s. SIGTERM goes to the Python driver only: it stops its queries
    and flushes progress while its JVM is still alive (a JVM signalled at the same time shuts down
    under the running micro-batch). In the shared host: that pipeline's queries only."""
    if host_control.uses_host(cfg, name):
        return host_control.stop_in_host(cfg, p)
    return bool(speed_process(cfg, p, name).stop(timeout=90, group=False))


def speed_running(cfg: TidewaterConfig, p: Pipeline) -> bool:
    """Whether the pipeline's main job runs (its own process, or its queries in the shared host)."""
    if host_control.uses_host(cfg, None):
        return host_control.running_in_host(cfg, p.name)
    return bool(speed_process(cfg, p).running())


def stop_all_speed(cfg: TidewaterConfig) -> list[str]:
    """Stop every speed and replay job and the shared speed host (whose wanted set is emptied first)."""
    forget_all(cfg)
    stopped = []
    for pid_file in sorted([*naming.run_dir(cfg).glob("speed-*.pid"), *naming.run_dir(cfg).glob("replay-*.pid")]):
        if ManagedProcess(pid_file.stem, naming.run_dir(cfg), naming.logs_dir(cfg)).stop(timeout=90, group=False):
            stopped.append(pid_file.stem)
    return stopped


def replay_running(cfg: TidewaterConfig, pipeline: str) -> bool:
    """True while a replay job of the pipeline (PID file ``replay-<p>*``) is running (a check of PID
    files only, so it takes the pipeline's name: no definition is needed)."""
    return any(ManagedProcess(f.stem, naming.run_dir(cfg), naming.logs_dir(cfg)).running()
               for f in naming.run_dir(cfg).glob(f"replay-{pipeline}*.pid"))


def speed_status(cfg: TidewaterConfig, p: Pipeline) -> dict[str, Any]:
    """Running?, last batch time, watermark, rates and consumer lag per partition (from ops)."""
    version = active_version(cfg, p.name)
    out: dict[str, Any] = {"pipeline": p.name, "version": version, "host": cfg.speed.host, **job_facts(cfg, p),
                           "switch_in_progress": held_elsewhere(cfg, switch_lock_name(p.name))}
    last = latest_progress(cfg, p.name, version=version)
    out.update(progress_fields(last), topic=p.topic, advanced_at=last_advanced(cfg, p.name, version))
    try:
        ends = offsets(cfg, p.topic)
    except Exception as exc:  # broker down: say so instead of failing the status
        out.update(topic_exists=None, lag=f"unavailable ({exc.__class__.__name__})")
        return out
    out.update(topic_exists=bool(ends), lag=lag_after(ends, topic_offsets(last, p.topic)) if ends else None)
    if not ends:  # not "lag 0": nothing can arrive (auto.create.topics.enable=false)
        out["problem"] = str(TopicMissing(p.name, p.topic, cfg.kafka.bootstrap))
    elif refused := definition_guard.speed_refusal(cfg, p, version):  # 'speed start' would refuse it
        out["problem"] = refused
    return out


def progress_fields(last: StreamProgress | None) -> dict[str, Any]:
    """What ``speed status`` shows of the newest progress row ({} before the first micro-batch)."""
    if last is None:
        return {}
    return {"last_batch_time": last.batch_time, "watermark": last.watermark,
            "input_rows_per_second": last.input_rows_per_second,
            "processed_rows_per_second": last.processed_rows_per_second,
            "end_offsets": last.end_offsets, "batch_id": last.batch_id, "recorded_at": last.recorded_at}


def job_facts(cfg: TidewaterConfig, p: Pipeline) -> dict[str, Any]:
    """running, pid, started_at and log of the pipeline's main job; in the shared host, the host's PID and
    log, the time the host started the pipeline's queries, and its ``state`` (with the ``error`` of a failed one)."""
    if host_control.uses_host(cfg, None):
        status = host_control.in_host(cfg, p.name) or {}
        running = status.get("state") == "running"
        return {"running": running, "pid": status.get("host_pid") if running else None,
                "started_at": status.get("at") if running else None, "state": status.get("state", "stopped"),
                "error": status.get("error"), "log": str(host_control.host_process(cfg).log_file)}
    proc = speed_process(cfg, p)
    started = proc.started_at()
    return {"running": proc.running(), "pid": proc.pid(),
            "started_at": datetime.fromtimestamp(started, UTC).isoformat() if started else None,
            "log": str(proc.log_file)}


def require_topic(cfg: TidewaterConfig, p: Pipeline) -> None:
    """``TopicMissing`` when the pipeline's topic does not exist, one line when Kafka does not answer or
    the topic's record times come from the producers' clocks (``kafka_admin.require_log_append_time``)."""
    from kafka.errors import KafkaError

    try:
        found = offsets(cfg, p.topic)
    except KafkaError as exc:
        raise ServiceError(f"Kafka at {cfg.kafka.bootstrap} does not answer ({exc.__class__.__name__}); "
                           "start it with 'tidewater up'") from None
    if not found:
        raise TopicMissing(p.name, p.topic, cfg.kafka.bootstrap)
    require_log_append_time(cfg, p.topic)


def wait_caught_up(cfg: TidewaterConfig, p: Pipeline, queries: tuple[str, ...] = ("ingest", "speed"),
                   version: int | None = None, timeout: float = 300.0, max_lag: int = 0,
                   job_must_run: bool = False) -> bool:
    """Block until every query's committed offsets are within ``max_lag`` of the topic's end. With
    ``job_must_run``, a main speed job that is gone raises at once, with its log's error lines (nothing
    restarts it here: waiting out the timeout would only hide why)."""
    deadline, proc = time.monotonic() + timeout, speed_process(cfg, p)
    if host_control.uses_host(cfg, None):
        proc = host_control.host_process(cfg)
    while time.monotonic() < deadline:
        lags = [lag_records(cfg, p, q, None if q == "ingest" else version) for q in queries]
        if all(lag is not None and lag <= max_lag for lag in lags):
            return True
        if job_must_run and not speed_running(cfg, p):
            raise ServiceError(f"speed: the job of {p.name} exited with lag {lags}; log {proc.log_file} (its error "
                               f"lines):\n{job_evidence(proc.tail(20_000))}")
        time.sleep(LAG_POLL_SECONDS)
    return False
