"""The pending file of a micro-batch's ops.stream_progress rows keeps every value and type."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakehouse.progress_records import StreamProgress
from spark_jobs.speed.stream_progress_rows import decode, encode, pending_dir

pytestmark = pytest.mark.unit


def test_pending_rows_round_trip_with_their_instants() -> None:
    row = StreamProgress.from_row({"pipeline": "sensor_readings", "query": "speed", "query_version": 1, "run_id": "q-1", "batch_id": 7,
           "batch_time": datetime(2026, 11, 25, 3, 4, 5, 123000, tzinfo=UTC), "input_rows": 10,
           "input_rows_per_second": None, "processed_rows_per_second": 12.5, "batch_duration_ms": 800,
           "watermark": None, "state_rows": 0, "rows_dropped_by_watermark": 3, "end_offsets": '{"t": {"0": 5}}',
           "latest_offsets": None, "recorded_at": datetime(2026, 11, 25, 3, 4, 6, tzinfo=UTC)})
    tag, rows = decode(encode("q-1/7", [row]))
    assert tag == "q-1/7"
    assert rows == [row]
    assert rows[0].batch_time is not None and rows[0].batch_time.tzinfo is not None  # an instant, not a wall-clock time of this host


def test_pending_rows_live_beside_the_checkpoint_so_deleting_it_keeps_them(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoints" / "sensor_readings" / "stream_v1"
    assert pending_dir(checkpoint).parent == checkpoint.parent
    assert not pending_dir(checkpoint).is_relative_to(checkpoint)


class FlakyWrite:
    """A counter for the pure retry rule (no table involved): its first ``fail_before`` calls raise,
    and the first ``commit_then_fail`` of them count a row before raising (an error after a commit)."""

    def __init__(self, fail_before: int, commit_then_fail: int = 0) -> None:
        self.rows, self.calls, self.fail_before, self.commit_then_fail = 0, 0, fail_before, commit_then_fail

    def append(self) -> None:
        self.calls += 1
        if self.calls <= self.commit_then_fail:
            self.rows += 1
        if self.calls <= self.fail_before:
            raise RuntimeError("transient failure")
        self.rows += 1


def test_a_failed_progress_append_is_retried_once_written_only() -> None:
    from spark_jobs.speed.stream_progress_rows import append_with_retries

    transient = FlakyWrite(fail_before=1)
    assert append_with_retries(transient.append, lambda: transient.rows > 0, "q/1", pause_s=0) == 2
    assert transient.rows == 1
    committed = FlakyWrite(fail_before=1, commit_then_fail=1)  # the retry finds the row: no second append
    assert append_with_retries(committed.append, lambda: committed.rows > 0, "q/2", pause_s=0) == 2
    assert (committed.rows, committed.calls) == (1, 1)
    broken = FlakyWrite(fail_before=99)
    with pytest.raises(RuntimeError):
        append_with_retries(broken.append, lambda: broken.rows > 0, "q/3", attempts=3, pause_s=0)
    assert (broken.rows, broken.calls) == (0, 3)
