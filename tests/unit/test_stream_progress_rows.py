"""The pending file of a micro-batch's ops.stream_progress rows keeps every value and type."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from spark_jobs.io.stream_progress_rows import decode, encode, pending_dir

pytestmark = pytest.mark.unit


def test_pending_rows_round_trip_with_their_instants() -> None:
    row = {"pipeline": "sensor_readings", "query": "speed", "query_version": 1, "run_id": "q-1", "batch_id": 7,
           "batch_time": datetime(2026, 11, 25, 3, 4, 5, 123000, tzinfo=UTC), "input_rows": 10,
           "input_rows_per_second": None, "processed_rows_per_second": 12.5, "batch_duration_ms": 800,
           "watermark": None, "state_rows": 0, "rows_dropped_by_watermark": 3, "end_offsets": '{"t": {"0": 5}}',
           "latest_offsets": None, "recorded_at": datetime(2026, 11, 25, 3, 4, 6, tzinfo=UTC)}
    tag, rows = decode(encode("q-1/7", [row]))
    assert tag == "q-1/7"
    assert rows == [row]
    assert rows[0]["batch_time"].tzinfo is not None  # an instant, not a wall-clock time of this host


def test_pending_rows_live_beside_the_checkpoint_so_deleting_it_keeps_them(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoints" / "sensor_readings" / "stream_v1"
    assert pending_dir(checkpoint).parent == checkpoint.parent
    assert not pending_dir(checkpoint).is_relative_to(checkpoint)
