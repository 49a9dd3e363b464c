"""Scenario 6 peer: the sensor_readings aggregation in Flink SQL, run by PyFlink in benchmarks/.venv-flink.

Kafka source (JSON, event time from ``timestamp`` ms, watermark 2 minutes, bounded at the given end
offsets, scenario 1's backlog, so the job ends when it is consumed) -> TUMBLE 1 minute per sensor_id with count,
avg, min, max -> totals over all windows, collected to the client. Prints one JSON line:
``{"seconds": s, "totals": {...}}`` where ``seconds`` runs from job submission to the last result.

Run: ``benchmarks/.venv-flink/bin/python benchmarks/flink_job.py --bootstrap H:P --topic T --jar J``.
"""

from __future__ import annotations

import argparse
import json
import time

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

WINDOWS = """SELECT sensor_id, window_start, window_end, COUNT(*) AS event_count, AVG(temperature) AS avg_t,
  MIN(temperature) AS min_t, MAX(temperature) AS max_t
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(event_time), INTERVAL '1' MINUTE))
GROUP BY sensor_id, window_start, window_end"""

TOTALS = """SELECT COUNT(*) AS windows, SUM(event_count) AS events, SUM(min_t) AS sum_min, SUM(max_t) AS sum_max,
  SUM(avg_t * event_count) AS sum_temperature FROM ({windows})"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--jar", required=True)
    ap.add_argument("--until", required=True, help="end offsets: partition:0,offset:N;partition:1,offset:M")
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()

    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    for key, value in {"pipeline.jars": f"file://{args.jar}", "parallelism.default": str(args.parallelism),
                       "table.local-time-zone": "UTC", "table.exec.mini-batch.enabled": "true",
                       "table.exec.mini-batch.allow-latency": "1 s", "table.exec.mini-batch.size": "10000",
                       "taskmanager.memory.process.size": "2g"}.items():
        conf.set(key, value)
    env.execute_sql(SOURCE.format(topic=args.topic, bootstrap=args.bootstrap, until=args.until))
    started = time.monotonic()
    result = env.execute_sql(TOTALS.format(windows=WINDOWS))
    last = None
    with result.collect() as rows:
        for row in rows:
            last = row
    seconds = time.monotonic() - started
    names = ("windows", "events", "sum_min", "sum_max", "sum_temperature")
    totals = {n: float(v or 0) for n, v in zip(names, list(last) if last is not None else [0] * 5, strict=True)}
    print(json.dumps({"seconds": round(seconds, 2), "totals": totals}), flush=True)


if __name__ == "__main__":
    main()
