"""``make demo``: the whole Lambda loop on the embedded local stack, in about ten minutes.

1. ``tidewater up``: Derby metastore, Kafka (KRaft), Spark Thrift server and Airflow on 127.0.0.1.
2. ``tidewater produce sensor_readings``: ten minutes of event time for 50 sensors, with
   out-of-order, duplicate and malformed records mixed in.
3. ``tidewater speed start``: the streaming job fills ``quarantine``, ``bronze`` and ``speed``; then
   five more minutes of events arrive, some later than the watermark (bronze keeps them, speed drops
   and counts them).
4. What the stream saw beyond its windows: the alerts of the pipeline's ``alerts:`` patterns
   (``alerts.sensor_readings``), the late events the speed layer left out and why (``late.sensor_readings``),
   and ``tidewater whatif``: the watermark delay these events call for.
5. ``tidewater batch``: exact windows from bronze, validated by Great Expectations, published.
6. ``serving.sensor_readings`` and ``tidewater reconcile``: what changed between speed and batch.

The stack is left running for exploring (Airflow UI, JDBC, ``tidewater sql``); ``make down`` stops it.
Run: ``python -m tidewater.demo [--events N]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from infra.services import airflow, thrift_access, thrift_server
from lakehouse.config import load_config
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed.control import wait_caught_up

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

PIPELINE = "sensor_readings"


def step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def tidewater(*args: str, check: bool = True) -> int:
    """Run one CLI command in its own process, exactly as a user would type it."""
    print(f"$ tidewater {' '.join(args)}", flush=True)
    rc = subprocess.call([sys.executable, "-m", "tidewater.cli", *args])
    if check and rc != 0:
        raise SystemExit(f"tidewater: demo step 'tidewater {' '.join(args)}' failed with exit code {rc}")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tidewater.demo")
    ap.add_argument("--events", type=int, default=30_000, help="events to produce (default 30000)")
    args = ap.parse_args(argv)
    cfg = load_config()
    started = time.monotonic()

    step("1/6 start the local stack")
    tidewater("up")

    step("2/6 produce ten minutes of events: 3% out of order, 2% duplicates, 1% malformed")
    start_ms = (int(time.time() * 1000) - 30 * 60_000) // 60_000 * 60_000
    first = args.events * 2 // 3
    tidewater("produce", PIPELINE, "--count", str(first), "--start-ms", str(start_ms),
              "--step-ms", f"{10 * 60_000 / first:.3f}", "--out-of-order", "0.03", "--duplicates", "0.02",
              "--malformed", "0.01")

    step("3/6 speed layer: Kafka -> quarantine / bronze / speed (exactly once)")
    tidewater("speed", "start", PIPELINE)
    _wait(cfg)
    late = max(1, args.events // 50)
    print(f"… {late} events from minutes 2-5, behind the watermark by now (bronze keeps them, speed drops and counts them)")
    tidewater("produce", PIPELINE, "--count", str(late), "--start-ms", str(start_ms + 2 * 60_000),
              "--step-ms", f"{3 * 60_000 / late:.3f}", "--seed", "9")
    print("… five more minutes of events")
    rest = args.events - first - late
    tidewater("produce", PIPELINE, "--count", str(rest), "--start-ms", str(start_ms + 10 * 60_000),
              "--step-ms", f"{5 * 60_000 / rest:.3f}", "--out-of-order", "0.03", "--duplicates", "0.02",
              "--malformed", "0.01", "--seed", "8")
    _wait(cfg)
    tidewater("speed", "status", PIPELINE, check=False)
    tidewater("sql", "SELECT reason_code, count(*) AS records FROM quarantine.sensor_readings GROUP BY reason_code "
              "ORDER BY reason_code")
    tidewater("sql", "SELECT sum(rows_dropped_by_watermark) AS late_rows_dropped_by_speed_watermark "
              "FROM ops.stream_progress WHERE pipeline = 'sensor_readings' AND query = 'speed'")

    step("4/6 stream intelligence: pattern alerts, late events kept and explained, the watermark chosen from data")
    tidewater("sql", "SELECT pattern, kind, count(*) AS alerts, min(first_event_time) AS first_seen, "
              "max(last_event_time) AS last_seen FROM alerts.sensor_readings GROUP BY pattern, kind ORDER BY pattern")
    tidewater("sql", "SELECT count(DISTINCT kafka_partition, kafka_offset) AS late_events, "
              "round(avg(lateness_ms) / 1000) AS avg_lateness_s, max(lateness_ms) / 1000 AS max_lateness_s, "
              "count(DISTINCT window_start) AS windows_missed FROM late.sensor_readings")
    tidewater("whatif", PIPELINE, "--delays", "30s,1m,2m,5m,10m", check=False)  # exit 1: no delay within the target

    step("5/6 batch layer: exact windows from bronze, quality-gated, published atomically")
    tidewater("batch", PIPELINE)

    step("6/6 serving view and reconciliation")
    tidewater("sql", "SELECT source, finality, count(*) AS windows, sum(event_count) AS events "
              "FROM serving.sensor_readings GROUP BY source, finality ORDER BY source, finality")
    tidewater("sql", "SELECT sensor_id, window_start, event_count, round(avg_temperature, 2) AS avg_t, source, "
              "finality FROM serving.sensor_readings WHERE finality = 'corrected' ORDER BY window_start LIMIT 10")
    tidewater("reconcile", PIPELINE)
    tidewater("status", check=False)
    print(f"\nDemo finished in {time.monotonic() - started:.0f}s. The stack is still running:\n"
          f"  Airflow UI   {_airflow_url(cfg)}  (login printed by 'tidewater up' above)\n"
          f"  JDBC         {_jdbc_url(cfg)}  (users analyst, read-only, and admin; {_jdbc_logins(cfg)})\n"
          "               .venv/bin/tidewater beeline  (connects as analyst)\n"
          f"  SQL          .venv/bin/tidewater sql \"SELECT * FROM serving.{PIPELINE} LIMIT 10\"\n"
          "  stop it with 'make down'")
    return 0


def _wait(cfg: TidewaterConfig) -> None:
    p = load_pipeline(PIPELINE, cfg.pipelines)
    queries = ("ingest", "speed", "alerts") if p.alerts else ("ingest", "speed")
    if not wait_caught_up(cfg, p, queries=queries, timeout=600):
        raise SystemExit("tidewater: the speed layer did not catch up within 10 minutes; see "
                         f"'tidewater speed status {PIPELINE}' and its log")
    time.sleep(2 * 5)  # two more triggers: the no-data batch that advances the watermark, finalizes windows and fires alerts


def _jdbc_url(cfg: TidewaterConfig) -> str:
    return thrift_server.jdbc_url(cfg)


def _jdbc_logins(cfg: TidewaterConfig) -> str:
    return thrift_access.where(cfg)


def _airflow_url(cfg: TidewaterConfig) -> str:
    return airflow.base_url(cfg)


if __name__ == "__main__":
    sys.exit(main())
