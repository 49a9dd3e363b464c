"""A pipeline whose Kafka topic does not exist, and a machine without ``java``, give one line and an
exit code from ``lakehouse.errors`` instead of an idle job or a traceback.

Both run the real CLI in subprocesses against this module's stack (Kafka + metastore); no Spark
session or speed job starts (every command here stops before its JVM would)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lakehouse.errors import TidewaterError, TopicMissing

pytestmark = pytest.mark.integration

MISSING = "lift_rides"        # this module never creates its topic
PRESENT = "sensor_readings"   # created by the java test, so commands get past the topic checks


def tidewater(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidewater: "), out.stderr
    return lines[0]


def test_missing_topic_is_reported_and_refused(stack: Any) -> None:
    from dags.tidewater_common import speed_decision, speed_status
    from spark_jobs.io.kafka_admin import ensure_topic

    cfg = stack
    expected = f"tidewater: {TopicMissing(MISSING, 'lift-rides', cfg.kafka.bootstrap)}"
    assert "create it with 'tidewater up' or 'tidewater produce lift_rides'" in expected
    assert "'topic:' in lakehouse/pipelines/lift_rides.yml" in expected

    status = tidewater("speed", "status", MISSING, "--json")  # before: exit 1 with lag {} (looked idle)
    assert status.returncode == TopicMissing.EXIT_CODE == 4, status.stdout + status.stderr
    assert one_line(status) == expected
    st = json.loads(status.stdout)
    assert (st["topic"], st["topic_exists"], st["lag"], st["running"]) == ("lift-rides", False, None, False)
    assert f"tidewater: {st['problem']}" == expected

    start = tidewater("speed", "start", MISSING)
    assert start.returncode == TopicMissing.EXIT_CODE, start.stdout + start.stderr
    assert one_line(start) == expected
    assert not list((cfg.data_dir / "run").glob("speed-*.pid"))  # nothing was started

    with pytest.raises(RuntimeError, match="does not exist") as failed:  # the supervisor DAG's task fails
        speed_status(MISSING)
    assert str(failed.value) == f"supervisor: {st['problem']}"

    assert ensure_topic(cfg, "lift-rides")  # what 'tidewater up' / 'produce' do: now it is just not running
    st = speed_status(MISSING)
    assert st["topic_exists"] is True and st["running"] is False and "problem" not in st
    assert set(st["lag"]) == {str(i) for i in range(cfg.kafka.partitions)}
    assert speed_decision(st, cfg.spark.trigger_seconds)[0] == "start"


def without_java(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if d and not (Path(d) / "java").exists())
    return {**env, **extra}


JVM_COMMANDS = [
    ("up",), ("sql", "SELECT 1"), ("batch", PRESENT, "--publish", "--run-id", "r1"), ("speed", "start", PRESENT), ("speed", "run", PRESENT),
    ("replay", PRESENT), ("reconcile", PRESENT), ("check", PRESENT), ("serving", "refresh", PRESENT),
    ("maintenance", "--only", "tables", "--dry-run"), ("beeline",),
]


def test_every_jvm_command_without_java_says_so_in_one_line(stack: Any) -> None:
    from spark_jobs.io.kafka_admin import ensure_topic

    cfg = stack
    ensure_topic(cfg, "sensor-readings")  # replay and speed start check the topic before Spark
    env = without_java()
    assert not any((Path(d) / "java").exists() for d in env["PATH"].split(os.pathsep))
    procs = {args: subprocess.Popen([sys.executable, "-m", "tidewater.cli", *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=env) for args in JVM_COMMANDS}
    for args, proc in procs.items():  # all at once: each stops before its JVM, so this costs only imports
        out, err = proc.communicate(timeout=300)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        assert proc.returncode == TidewaterError.EXIT_CODE, f"tidewater {' '.join(args)}: {out}{err}"
        line = one_line(done)
        assert "java was not found on PATH and JAVA_HOME is unset" in line, (args, line)
        assert "install a JDK 17" in line and "set JAVA_HOME" in line, (args, line)
    assert not list((cfg.data_dir / "run").glob("speed-*.pid"))
    # staging an empty pipeline needs no JVM at all: bronze's Delta log decides (exit 3, its own line)
    empty = tidewater("batch", PRESENT, "--stage-only", env=env)
    assert empty.returncode == 3 and "is empty" in one_line(empty), empty.stdout + empty.stderr

    bad_home = tidewater("sql", "SELECT 1", env={**os.environ, "JAVA_HOME": str(cfg.data_dir / "no-jdk")})
    assert bad_home.returncode == 2, bad_home.stdout + bad_home.stderr
    assert one_line(bad_home) == (f"tidewater: config error: 'JAVA_HOME' is '{cfg.data_dir / 'no-jdk'}'; expected "
                                  "a JDK 17 folder with bin/java; set JAVA_HOME to one, or unset it to use java from PATH")


def test_topic_with_producer_clock_times_is_refused_at_up_and_speed_start(stack: Any) -> None:
    """A topic created outside Tidewater with ``message.timestamp.type=CreateTime`` (Kafka's default) would
    let producers' clocks decide what counts as future-skewed and where the batch cutoff lies: both
    ``tidewater up`` (its topic step) and ``speed start`` refuse it with one line naming the topic and the
    fix; once the fix is applied, the same checks pass."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    from lakehouse.pipeline import load_pipeline
    from spark_jobs.io.kafka_admin import TIMESTAMP_TYPE, require_log_append_time
    from tidewater.commands.stack import create_topics

    cfg = stack
    p = load_pipeline("game_sessions", cfg.pipelines)
    admin = KafkaAdminClient(bootstrap_servers=cfg.kafka.bootstrap)
    admin.create_topics([NewTopic(p.topic, 2, 1)])  # as an external cluster or an older stack made it
    fix = f"--entity-name {p.topic} --add-config {TIMESTAMP_TYPE}=LogAppendTime"
    try:
        start = tidewater("speed", "start", p.name)
        assert start.returncode == TidewaterError.EXIT_CODE, start.stdout + start.stderr
        line = one_line(start)
        assert f"topic '{p.topic}' has {TIMESTAMP_TYPE}=CreateTime" in line and fix in line
        assert not list((cfg.data_dir / "run").glob("speed-*.pid"))
        with pytest.raises(TidewaterError, match=f"topic '{p.topic}' has {TIMESTAMP_TYPE}=CreateTime"):
            create_topics(cfg)  # the topic step of 'tidewater up'
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, p.topic, configs={TIMESTAMP_TYPE: "LogAppendTime"})])
        require_log_append_time(cfg, p.topic)
        assert p.topic not in create_topics(cfg)
    finally:
        admin.delete_topics([p.topic])
        admin.close()
