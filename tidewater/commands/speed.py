"""``tidewater speed start|stop|status|run <pipeline>``: the detached speed-layer job."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from lakehouse import naming
from lakehouse.commands import add_pipeline_arg, config_from, pipeline_from, progress
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError


def speed_process(cfg: TidewaterConfig, pipeline: str, name: str | None = None) -> Any:
    """The pipeline's main job (ingest + active speed version), or another named job (a replay)."""
    from infra.services.process import ManagedProcess

    return ManagedProcess(name or f"speed-{pipeline}", naming.run_dir(cfg), naming.logs_dir(cfg))


def active_version_file(cfg: TidewaterConfig, pipeline: str) -> int:
    """The serving (active) speed version, as recorded by replay switches (default 1)."""
    path = naming.versions_dir(cfg) / f"{pipeline}.active"
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return 1


def set_active_version(cfg: TidewaterConfig, pipeline: str, version: int, previous: int | None = None) -> None:
    """Record the active (and the previous) speed version, each file atomically (write + rename)."""
    records = ([("previous", previous)] if previous is not None else []) + [("active", version)]
    for kind, value in records:
        path = naming.versions_dir(cfg) / f"{pipeline}.{kind}"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{value}\n")
        tmp.replace(path)


def start_speed(cfg: TidewaterConfig, pipeline: str, version: int | None = None, queries: str = "ingest,speed",
                starting_offsets: str | None = None, wait: float = 120.0, name: str | None = None) -> int:
    """Start the job detached (PID file + log). Idempotent: a running copy is left alone. The main job
    is refused while another process switches versions (a replay or rollback froze it on purpose)."""
    from spark_jobs.locks import held_elsewhere
    from spark_jobs.replay import switch_lock_name

    if name is None and held_elsewhere(cfg, switch_lock_name(pipeline)):
        raise TidewaterError(f"speed: a replay or rollback of {pipeline} is switching versions; it restarts the "
                             "main job itself when done (see 'tidewater speed status')")
    version = version or active_version_file(cfg, pipeline)
    proc = speed_process(cfg, pipeline, name)
    if proc.running():
        return int(proc.pid())
    argv = [sys.executable, "-m", "spark_jobs.speed", pipeline, "--version", str(version), "--queries", queries]
    if starting_offsets:
        argv += ["--starting-offsets", starting_offsets]
    mark = proc.log_size()  # the log is appended across runs: look only at this start's lines
    pid = proc.start(argv)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if "running queries" in proc.log_since(mark):
            return pid
        if not proc.running():
            raise TidewaterError(f"speed: {pipeline} exited during start; log {proc.log_file}:\n{proc.tail(15)}")
        time.sleep(1)
    return pid


def stop_speed(cfg: TidewaterConfig, pipeline: str, name: str | None = None) -> bool:
    """Graceful stop, SIGKILL after 90 s. SIGTERM goes to the Python driver only: it stops its queries
    and flushes progress while its JVM is still alive (a JVM signalled at the same time shuts down
    under the running micro-batch)."""
    return bool(speed_process(cfg, pipeline, name).stop(timeout=90, group=False))


def stop_all_speed(cfg: TidewaterConfig) -> list[str]:
    from infra.services.process import ManagedProcess

    stopped = []
    for pid_file in sorted([*naming.run_dir(cfg).glob("speed-*.pid"), *naming.run_dir(cfg).glob("replay-*.pid")]):
        if ManagedProcess(pid_file.stem, naming.run_dir(cfg), naming.logs_dir(cfg)).stop(timeout=90, group=False):
            stopped.append(pid_file.stem)
    return stopped


def speed_status(cfg: TidewaterConfig, pipeline: str) -> dict[str, Any]:
    """Running?, last batch time, watermark, rates and consumer lag per partition (from ops)."""
    from lakehouse.pipeline import load_pipeline

    p = load_pipeline(pipeline, cfg.pipelines)
    version = active_version_file(cfg, pipeline)
    proc = speed_process(cfg, pipeline)
    from spark_jobs.locks import held_elsewhere
    from spark_jobs.replay import switch_lock_name

    out: dict[str, Any] = {"pipeline": pipeline, "version": version, "running": proc.running(), "pid": proc.pid(),
                           "log": str(proc.log_file),
                           "switch_in_progress": held_elsewhere(cfg, switch_lock_name(pipeline))}
    last = _last_progress(cfg, pipeline, version)
    out.update(last)
    committed = topic_offsets(last, p.topic)
    try:
        out["lag"] = partition_lag(cfg, p.topic, committed)
    except Exception as exc:  # broker down: say so instead of failing the status
        out["lag"] = f"unavailable ({exc.__class__.__name__})"
    return out


def parse_offsets(text: str | None) -> dict[str, Any]:
    """Kafka source offsets JSON ({topic: {partition: offset}}); {} when absent or unreadable."""
    import ast

    if not text:
        return {}
    try:
        return dict(json.loads(text))
    except ValueError:
        try:
            return dict(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return {}


def _last_progress(cfg: TidewaterConfig, pipeline: str, version: int) -> dict[str, Any]:
    """Latest row of ops.stream_progress for the speed query, read straight from the Delta log."""
    from spark_jobs.io.ops_reader import latest_progress

    return latest_progress(cfg, pipeline, version=version)


def cmd_speed(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    if args.action == "start":
        from lakehouse.commands.stack import require_topic

        require_topic(cfg, p.name, p.topic)  # a missing topic would idle with lag 0
        progress(f"starting speed layer for {p.name} …")
        pid = start_speed(cfg, p.name, args.version)
        print(f"speed {p.name}: running (pid {pid}); log {speed_process(cfg, p.name).log_file}")
    elif args.action == "stop":
        print(f"speed {p.name}: {'stopped' if stop_speed(cfg, p.name) else 'was not running'}")
    elif args.action == "run":
        from spark_jobs.speed import run

        run(cfg, p, args.version or active_version_file(cfg, p.name), ["ingest", "speed"])
    else:
        st = speed_status(cfg, p.name)
        if args.json:
            print(json.dumps(st, indent=2, default=str))
        else:
            for key in ("pipeline", "version", "running", "pid", "last_batch_time", "watermark",
                        "input_rows_per_second", "processed_rows_per_second", "lag", "log"):
                print(f"{key:<26} {st.get(key)}")
        return 0 if st["running"] else 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("speed", help="start, stop or inspect a pipeline's streaming job")
    p.add_argument("action", choices=["start", "stop", "status", "run"])
    add_pipeline_arg(p)
    p.add_argument("--version", type=int, help="query version (default: the active one)")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(handler=cmd_speed)


def committed_offsets(cfg: TidewaterConfig, pipeline: str, query: str = "speed",
                      version: int | None = None) -> dict[str, int] | None:
    """{partition: offset} that ``query`` (version) has committed, from ``ops.stream_progress``;
    None before its first batch."""
    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.ops_reader import latest_progress

    last = latest_progress(cfg, pipeline, query=query, version=version)
    if not last:
        return None
    return topic_offsets(last, load_pipeline(pipeline, cfg.pipelines).topic)


def topic_offsets(progress: dict[str, Any], topic: str) -> dict[str, int]:
    """{partition: offset} of ``topic`` in a progress row's ``end_offsets`` ({} when absent)."""
    return {str(k): int(v) for k, v in parse_offsets(progress.get("end_offsets")).get(topic, {}).items()}


def lag_records(cfg: TidewaterConfig, pipeline: str, query: str = "speed", version: int | None = None) -> int | None:
    """Records in the topic that ``query`` (version) has not yet committed; None before its first batch."""
    from lakehouse.pipeline import load_pipeline

    if version is None and query == "speed":
        version = active_version_file(cfg, pipeline)
    committed = committed_offsets(cfg, pipeline, query, version)
    if committed is None:
        return None
    return sum(partition_lag(cfg, load_pipeline(pipeline, cfg.pipelines).topic, committed).values())


def partition_lag(cfg: TidewaterConfig, topic: str, committed: dict[str, int]) -> dict[str, int]:
    """{partition: records in ``topic`` after the ``committed`` offset} (a partition never committed
    counts from its earliest retained offset)."""
    from spark_jobs.io.kafka_admin import offsets

    return {str(part): max(0, end - committed.get(str(part), begin)) for part, (begin, end) in offsets(cfg, topic).items()}


def wait_caught_up(cfg: TidewaterConfig, pipeline: str, queries: tuple[str, ...] = ("ingest", "speed"),
                   version: int | None = None, timeout: float = 300.0, max_lag: int = 0) -> bool:
    """Block until every query's committed offsets are within ``max_lag`` of the topic's end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lags = [lag_records(cfg, pipeline, q, None if q == "ingest" else version) for q in queries]
        if all(lag is not None and lag <= max_lag for lag in lags):
            return True
        time.sleep(2)
    return False
