"""Scenario 6 peer: the sensor_readings aggregation in Flink SQL, run by PyFlink in benchmarks/.venv-flink.

Kafka source (JSON, event time from ``timestamp`` ms, watermark 2 minutes, bounded at the given end offsets,
scenario 1's backlog, so the job ends when it is consumed) -> TUMBLE 1 minute per sensor_id with count, avg,
min, max -> ``INSERT INTO`` a filesystem sink: JSON lines under ``--sink``, one row per window. Checkpointing is
on (EXACTLY_ONCE, every ``--checkpoint-s`` seconds, checkpoints under ``--checkpoints``): part files roll
every checkpoint interval and become visible (renamed from hidden ``.part-*.inprogress.*``) only when a
checkpoint completes. At the end of the bounded input Flink's SQL file writer rolls and commits its last
files itself (``AbstractStreamingWriter.endInput``, Flink 2.2.1), then takes its final checkpoint and ends:
those last files are committed just before, not by, a checkpoint, so a crash in that gap could write their
windows twice after a restart (scenario 6 checks that no window is written twice).

``seconds`` runs from job submission to the job's end (``TableResult.wait()``); the totals are then read
back from the committed files in plain Python. Prints one JSON line:
``{"seconds": s, "totals": {...}, "sink": path, "files": n, "uncommitted": n, "duplicates": n}``.

Run: ``benchmarks/.venv-flink/bin/python benchmarks/flink_job.py --bootstrap H:P --topic T --jar J
--until 'partition:0,offset:N;...' --sink DIR --checkpoints DIR``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

SOURCE = """CREATE TABLE readings (
  event_id STRING, sensor_id STRING, `timestamp` BIGINT, temperature DOUBLE,
  event_time AS TO_TIMESTAMP_LTZ(`timestamp`, 3),
  WATERMARK FOR event_time AS event_time - INTERVAL '2' MINUTE
) WITH (
  'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
  'properties.group.id' = 'bench-flink', 'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = '{until}',
  'format' = 'json', 'json.ignore-parse-errors' = 'false'
)"""

SINK = """CREATE TABLE windows (
  sensor_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), event_count BIGINT,
  avg_t DOUBLE, min_t DOUBLE, max_t DOUBLE
) WITH (
  'connector' = 'filesystem', 'path' = '{path}', 'format' = 'json',
  'sink.rolling-policy.rollover-interval' = '{interval} s', 'sink.rolling-policy.check-interval' = '1 s'
)"""

INSERT = """INSERT INTO windows
SELECT sensor_id, window_start, window_end, COUNT(*) AS event_count, AVG(temperature) AS avg_t,
  MIN(temperature) AS min_t, MAX(temperature) AS max_t
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(event_time), INTERVAL '1' MINUTE))
GROUP BY sensor_id, window_start, window_end"""


def read_sink(sink: Path) -> dict[str, object]:
    """Totals over the committed part files; hidden or in-progress files are counted, not read."""
    files = [f for f in sorted(sink.rglob("*")) if f.is_file()]
    committed = [f for f in files if not f.name.startswith((".", "_")) and "inprogress" not in f.name]
    totals = dict.fromkeys(("windows", "events", "sum_min", "sum_max", "sum_temperature"), 0.0)
    keys = set()
    for f in committed:
        for line in f.read_text().splitlines():
            w = json.loads(line)
            keys.add((w["sensor_id"], w["window_start"]))
            totals["windows"] += 1
            totals["events"] += w["event_count"]
            totals["sum_min"] += w["min_t"]
            totals["sum_max"] += w["max_t"]
            totals["sum_temperature"] += w["avg_t"] * w["event_count"]
    return {
        "totals": totals,
        "sink": str(sink),
        "files": len(committed),
        "uncommitted": len(files) - len(committed),
        "duplicates": int(totals["windows"]) - len(keys),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--jar", required=True)
    ap.add_argument("--until", required=True, help="end offsets: partition:0,offset:N;partition:1,offset:M")
    ap.add_argument("--sink", required=True, type=Path, help="empty directory for the windows' JSON files")
    ap.add_argument("--checkpoints", required=True, type=Path, help="checkpoint directory")
    ap.add_argument("--checkpoint-s", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()
    sink = args.sink.resolve()
    if sink.exists() and any(sink.iterdir()):
        raise SystemExit(f"flink_job: sink directory {sink} is not empty")

    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    for key, value in {
        "pipeline.jars": f"file://{args.jar}",
        "parallelism.default": str(args.parallelism),
        "table.local-time-zone": "UTC",
        "table.exec.mini-batch.enabled": "true",
        "table.exec.mini-batch.allow-latency": "1 s",
        "table.exec.mini-batch.size": "10000",
        "taskmanager.memory.process.size": "2g",
        "execution.checkpointing.interval": f"{args.checkpoint_s} s",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
        "execution.checkpointing.dir": args.checkpoints.resolve().as_uri(),
    }.items():
        conf.set(key, value)
    env.execute_sql(SOURCE.format(topic=args.topic, bootstrap=args.bootstrap, until=args.until))
    env.execute_sql(SINK.format(path=sink.as_uri(), interval=args.checkpoint_s))
    started = time.monotonic()
    env.execute_sql(INSERT).wait()
    seconds = time.monotonic() - started
    print(json.dumps({"seconds": round(seconds, 2), **read_sink(sink)}), flush=True)


if __name__ == "__main__":
    main()
