"""Records Kafka did not take are counted and reported, never lost silently.
An unreachable broker here is a closed local port; a broker that stops in the middle of a run is
covered in tests/integration/test_kafka_broker.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra.services.ports import free_port
from lakehouse.config import load_config
from spark_jobs.synthetic_events import Record

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_send_counts_every_record_it_could_not_deliver(tmp_path: Path) -> None:
    from spark_jobs.io.producer import send

    cfg = load_config(REPO / "tidewater.yml", env={"TIDEWATER_DATA_DIR": str(tmp_path),
                                                   "TIDEWATER_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}"})
    records = (Record(None, b'{"event_id": "x"}', "valid" if i % 4 else "malformed") for i in range(20))
    result = send(cfg, "nowhere", records, timeout=2)
    assert (result.total, result.delivered, result.failed) == (20, 0, 20)
    assert result.counts == {"valid": 15, "malformed": 5}
    assert "bootstrap" in result.error.lower(), result.error


def test_produce_to_an_unreachable_broker_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "TIDEWATER_CONFIG": str(REPO / "tidewater.yml"), "TIDEWATER_DATA_DIR": str(tmp_path),
           "TIDEWATER_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}"}
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "produce", "sensor_readings", "--count", "20"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidewater: produce: "), out.stderr
    assert "none of the 20 records was sent" in lines[0] and "tidewater up" in lines[0], lines[0]
    assert time.monotonic() - started < 30
