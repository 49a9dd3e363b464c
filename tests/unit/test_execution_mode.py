"""How many Kafka records a planned micro-batch holds, read from the checkpoint's offset log (the
fact that decides between generated code and interpreted evaluation)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse.config import SparkConfig
from spark_jobs.speed.execution_mode import planned_records, records_between

pytestmark = pytest.mark.unit


def _offset_entry(checkpoint: Path, batch_id: int, offsets: dict[str, dict[str, int]]) -> None:
    folder = checkpoint / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_764_000_000_000, "conf": {}}
    (folder / str(batch_id)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps(offsets)}")


def test_records_between_counts_every_partition_and_a_new_one_from_zero() -> None:
    start = {"t": {"0": 100, "1": 250}}
    end = {"t": {"0": 160, "1": 250, "2": 7}}
    assert records_between(start, end) == 60 + 0 + 7


def test_planned_records_reads_the_offset_log_of_this_and_the_previous_micro_batch(tmp_path: Path) -> None:
    from spark_jobs.io.lineage import offset_log_entry

    _offset_entry(tmp_path, 4, {"sensor-readings": {"0": 1_000, "1": 2_000}})
    _offset_entry(tmp_path, 5, {"sensor-readings": {"0": 1_600, "1": 2_900}})
    end = offset_log_entry(tmp_path, 5)[1]  # what StreamBatch reads for the micro-batch it runs
    assert planned_records(tmp_path, 5, end) == 1_500
    assert planned_records(tmp_path, 4, offset_log_entry(tmp_path, 4)[1]) is None  # no entry 3: generated code
    assert planned_records(tmp_path, 0, {}) is None


def test_the_threshold_covers_a_level_1000_per_second_stream_only() -> None:
    # 1,000 events/s at 1-3 s micro-batches: interpreted; 10,000 events/s (25-35K records): generated code
    assert 3_000 <= SparkConfig().interpreted_max_records < 25_000
