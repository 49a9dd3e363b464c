"""A randomized check of the whole Lambda path: seeded random streams for all three pipelines
(out-of-order, late, duplicate with the same and a different payload, malformed, clock-skewed events)
go through the real Kafka broker, the speed jobs and a batch run, and ``serving.<p>`` must equal, window
by window, a plain-Python oracle (``benchmarks/stream_oracle.py``) computed from the topic as the broker stored it.
Also checked: every Kafka offset in bronze or quarantine exactly once with the oracle's reason code,
the speed layer's late-event count, and ``corrected`` on the batch windows whose late events speed dropped.

The generator (``benchmarks/random_streams.py``) draws everything from one seed, printed with every failure.
Reproduce a failure with the same seed (event times are relative to the clock at the run)::

    TIDEWATER_TEST_SEED=<seed> .venv/bin/pytest tests/integration/test_random_streams.py

Without ``TIDEWATER_TEST_SEED`` each run draws a new seed. One stack, one speed job per pipeline, one
batch run per pipeline.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from datetime import UTC
from typing import Any

import pytest

from benchmarks.correctness import serving_differences, serving_rows, spark_query
from benchmarks.random_streams import Scenario, fast_clock, generate, read_topic, send
from benchmarks.stream_oracle import Expected, Record, expected_serving, reason_code
from lakehouse.pipeline import available_pipelines, load_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]
HOST_TZ = "Pacific/Chatham"  # UTC+12:45/+13:45: see the host_time_zone fixture

SEED = int(os.environ.get("TIDEWATER_TEST_SEED") or random.SystemRandom().randrange(2**32))


def cli(*args: str) -> None:
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"[seed {SEED}] tidewater {' '.join(args)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"


def wait_all(cfg: Any, names: list[str], what: str) -> None:
    from spark_jobs.speed.control import wait_caught_up

    for name in names:
        caught_up = wait_caught_up(cfg, load_pipeline(name, cfg.pipelines), timeout=300, job_must_run=True)
        assert caught_up, f"[seed {SEED}] {name}: speed did not catch up with {what}"


def wait_watermark(cfg: Any, name: str, target_ms: int, read_rows: Any) -> None:
    """Until a speed micro-batch ran with the final watermark (the one that closes the last sessions)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        marks = [r["watermark"] for r in read_rows(cfg, "ops.stream_progress")
                 if r["pipeline"] == name and r["query"] == "speed" and r["watermark"]]
        if any(int(m.replace(tzinfo=m.tzinfo or UTC).timestamp() * 1000) >= target_ms for m in marks):
            return
        time.sleep(2)
    raise AssertionError(f"[seed {SEED}] {name}: no speed micro-batch ran with the final watermark {target_ms}")


def test_random_streams_serving_equals_oracle(spark: Any, stack: Any) -> None:
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.io.ops_reader import read_rows
    from spark_jobs.speed.control import stop_speed

    cfg, names = stack, available_pipelines()
    pipes = {n: load_pipeline(n, cfg.pipelines) for n in names}
    assert {p.window.type for p in pipes.values()} == {"tumbling", "sliding", "session"}
    print(f"seed {SEED}: TIDEWATER_TEST_SEED={SEED} reproduces this scenario")
    now, started = int(time.time() * 1000), time.monotonic()
    scenarios: dict[str, Scenario] = {n: generate(p, SEED, now, cfg.kafka.partitions) for n, p in pipes.items()}
    for n, p in pipes.items():
        ensure_topic(cfg, p.topic)
        send(cfg.kafka.bootstrap, p.topic, scenarios[n].phases[0])
    for n in names:  # one after the other: three JVMs starting at once deadlock in the Derby metastore
        cli("speed", "start", n)
    try:
        wait_all(cfg, names, "phase 1")
        for n in names:
            send(cfg.kafka.bootstrap, pipes[n].topic, scenarios[n].phases[1])
        wait_all(cfg, names, "phase 2")
        for n in names:
            send(cfg.kafka.bootstrap, pipes[n].topic, scenarios[n].phases[2] + fast_clock(scenarios[n]))
        wait_all(cfg, names, "phase 3")
        records = {n: read_topic(cfg.kafka.bootstrap, p.topic) for n, p in pipes.items()}
        expected = {n: expected_serving(p, records[n]) for n, p in pipes.items()}
        for n in (n for n, p in pipes.items() if p.window.type == "session"):
            wait_watermark(cfg, n, expected[n].watermark_ms, read_rows)
    finally:
        for n in names:
            stop_speed(cfg, pipes[n])
    print(f"seed {SEED}: speed phases done in {time.monotonic() - started:.0f}s")

    from spark_jobs.batch import wap as batch

    problems: list[str] = []
    for n, p in pipes.items():
        s, exp = scenarios[n], expected[n]
        run = batch.run(spark, cfg, p)
        assert run.status == "published", f"[seed {SEED}] {n}: batch run {run}"
        found = [f"{n}: {d}" for d in check_pipeline(spark, cfg, p, s, exp, records[n], read_rows)]
        problems += found
        print(f"seed {SEED}: {n} checked at {time.monotonic() - started:.0f}s: {len(found)} problems, "
              f"{len(exp.rows)} windows, {sum(1 for c in exp.codes.values() if c)} quarantined of "
              f"{len(records[n])}, cutoff {exp.cutoff_ms}")
    assert not problems, (f"[seed {SEED}] serving differs from the oracle; reproduce with TIDEWATER_TEST_SEED={SEED}:\n"
                          + "\n".join(problems[:40]) + (f"\n… {len(problems) - 40} more" if len(problems) > 40 else ""))


def check_pipeline(spark: Any, cfg: Any, p: Any, s: Scenario, exp: Expected, records: list[Record],
                   read_rows: Any) -> list[str]:
    out: list[str] = []
    # exactly once: every offset in bronze or quarantine, once, with the oracle's reason code
    bronze = spark.sql(f"SELECT kafka_partition, kafka_offset FROM bronze.{p.name}").collect()
    quarantine = spark.sql(f"SELECT kafka_partition, kafka_offset, reason_code FROM quarantine.{p.name}").collect()
    stored = [((r[0], r[1]), None) for r in bronze] + [((r[0], r[1]), r[2]) for r in quarantine]
    if len(stored) != len(records) or dict(stored) != exp.codes:
        wrong = {k: (v, exp.codes.get(k)) for k, v in stored if exp.codes.get(k, "absent") != v}
        out.append(f"{len(stored)} stored rows for {len(records)} records; (stored, oracle) codes differ: {wrong}")
    if not any(exp.codes.values()) or all(exp.codes.values()):
        out.append("premise: the scenario must hold valid and quarantined records")
    # the premise behind the oracle's speed rows: only clean tail (and fast-clock) events in them
    for key, row in exp.rows.items():
        if row["source"] == "speed" and not all(m in s.tail_ids or m.startswith("f") for m in exp.members[key]):
            out.append(f"premise: speed window {key} holds body events {exp.members[key]}")
    got = serving_rows(spark_query(spark), p)
    diffs = serving_differences(p, exp, got)
    if diffs:  # what the view was cut on, for the reader of a failure
        from spark_jobs.shared.serving_view import view_text

        diffs.append(f"serving.{p.name} is: {view_text(spark, f'serving.{p.name}')[-400:]}")
    out += diffs
    for key, members in exp.members.items():  # speed dropped a late event: the batch row corrects it
        if (key in got and set(members) & s.late_ids and not set(members) & s.dirty_ids
                and got[key]["finality"] != "corrected"):
            out.append(f"{key} holds late events {set(members) & s.late_ids} but is {got[key]['finality']}")
    if p.window.type != "session":  # the stateless speed query counts its late events exactly
        arrived = int(time.time() * 1000)
        late = [e for _, v in s.phases[1] for code, e in [reason_code(p, Record(0, 0, arrived, v))]
                if code is None and e is not None and e[p.event_time] < s.w1]
        dropped = sum(r["rows_dropped_by_watermark"] or 0 for r in read_rows(cfg, "ops.stream_progress")
                      if r["pipeline"] == p.name and r["query"] == "speed")
        if dropped != len(late):
            out.append(f"speed counted {dropped} late events, the scenario sent {len(late)} behind the watermark")
    return out
