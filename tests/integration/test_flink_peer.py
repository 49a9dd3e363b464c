"""Scenario 6's Flink peer writes its windows to a checkpointed filesystem sink, and that sink is exact; scenario
9's Flink ``MATCH_RECOGNIZE`` job finds the alerts the plain-Python oracle finds.

Needs benchmarks/.venv-flink and the Flink Kafka connector jar (``bash benchmarks/setup-flink.sh``); skipped
without them. The events span 50 minutes of event time, so windows close while the job runs: the sink rolls
part files every second and commits them on the next checkpoint (1 s here; on 2 cores 2 of the 4-5 part
files came from mid-run checkpoints), and the end of the bounded input commits the last ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

from benchmarks.s6_flink import flink_missing

MISSING = flink_missing()
# decided before the fixtures start a stack: a machine without Flink pays nothing for this module
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900), pytest.mark.skipif(MISSING is not None, reason=str(MISSING))]
EVENTS, SENSORS = 300_000, 200


def test_flink_sink_holds_every_window_once(
    spark: SparkSession, stack: TidewaterConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import fill, s6_flink
    from benchmarks.sizes import SIZES
    from spark_jobs.io.kafka_admin import offsets

    monkeypatch.setattr(s6_flink, "CHECKPOINT_S", 1)
    # 3,000 s of event time from a minute boundary: 50 windows per sensor
    gen = fill.events(spark, EVENTS, SENSORS, fill.base_ms(), step_ms=10)
    fill.fill_topic(stack, "flink-peer", gen)
    expected = fill.expected_totals(gen)
    catchup = {
        "topic": "flink-peer",
        "events": EVENTS,
        "expected": expected,
        "offsets": {part: end for part, (_, end) in offsets(stack, "flink-peer").items()},
    }

    res = s6_flink.run(spark, stack, SIZES["quick"], tmp_path, {"catchup": catchup})

    failed = [c for c in res.checks if not c["ok"]]
    assert res.status == "ok", f"{res.notes} failed checks {failed}"
    assert expected["windows"] == 50 * SENSORS
    files = sorted((tmp_path / "flink-windows").rglob("*"))
    assert files and all(not f.name.startswith(".") and "inprogress" not in f.name for f in files)
    assert res.metrics["flink"]["sink_files"] == len(files) >= 2  # one writer per subtask at least
    assert res.settings["sink"]["checkpointing_mode"] == "EXACTLY_ONCE"


def test_flink_match_recognize_finds_the_oracles_hot_then_cold_alerts(spark: SparkSession, stack: TidewaterConfig,
                                                                      tmp_path: Path) -> None:
    """Scenario 9's Flink job over 20,000 events of 300 sensors (each sensor's readings cycle through one hot
    and six cold values): the matches its checkpointed sink holds are the plain-Python oracle's alerts."""
    from benchmarks import fill
    from benchmarks.alerts_bench import SENSORS as ALERT_SENSORS
    from benchmarks.alerts_bench import bench_pipeline
    from benchmarks.alerts_latency import ends
    from benchmarks.s9_alerts_flink import oracle, run_flink

    p = bench_pipeline("20 seconds")
    gen = fill.events(spark, 20_000, ALERT_SENSORS, fill.base_ms(), step_ms=3)
    fill.fill_topic(stack, p.topic, gen)

    out = run_flink(stack, p, ends(stack, p.topic), tmp_path)

    expected = oracle(spark, p, gen, 10**15)  # Flink decides every alert at the end of its bounded input
    found = [(m[0], m[1], m[2]) for m in out["found"]]
    assert len(expected) > 1_500 and sorted(found) == sorted(expected)
    assert out["uncommitted"] == 0 and out["matches"] == len(found) and out["seconds"] > 0
