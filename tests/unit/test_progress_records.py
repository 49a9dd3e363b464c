"""``StreamProgress`` is the typed row of ``ops.stream_progress``; a pending append survives as JSON (pure)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from lakehouse.contracts import STREAM_PROGRESS
from lakehouse.progress_records import StreamProgress
from spark_jobs.io.progress_recorder import progress_row, recovered_row
from spark_jobs.speed.stream_progress_rows import decode, encode

pytestmark = pytest.mark.unit


def test_a_progress_record_has_the_tables_columns_in_order() -> None:
    assert [f.name for f in dataclasses.fields(StreamProgress)] == STREAM_PROGRESS.column_names


def test_a_row_from_a_spark_progress_event() -> None:
    event = {"runId": "r1", "batchId": 7, "timestamp": "2026-03-01T10:00:00.000Z", "numInputRows": 40,
             "durationMs": {"triggerExecution": 900}, "eventTime": {"watermark": "2026-03-01T09:58:00.000Z"},
             "stateOperators": [{"numRowsTotal": 5, "numRowsDroppedByWatermark": 2},
                                {"numRowsTotal": 1, "numRowsDroppedByWatermark": 1}],
             "sources": [{"endOffset": {"t": {"0": 9}}, "latestOffset": {"t": {"0": 12}}}]}
    row = progress_row("p", "speed", 3, event)
    assert (row.batch_id, row.input_rows, row.batch_duration_ms, row.state_rows, row.rows_dropped_by_watermark) == (
        7, 40, 900, 6, 3)
    assert row.batch_time == datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert row.watermark == datetime(2026, 3, 1, 9, 58, tzinfo=UTC)
    assert (row.end_offsets, row.latest_offsets) == ('{"t": {"0": 9}}', '{"t": {"0": 12}}')
    assert row.row()[:5] == ("p", "speed", 3, "r1", 7)


def test_a_pending_row_reads_back_equal_and_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON a crash leaves on disk decodes to the same instants, whatever offset they were written with."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    row = recovered_row("p", "ingest", 1, 4, {"batchTimestampMs": 1_772_000_000_000, "batchWatermarkMs": 0},
                        {"t": {"0": 30, "1": 12}}, {"t": {"0": 10, "1": 2}})
    kolkata = dataclasses.replace(row, recorded_at=row.recorded_at.astimezone(timezone(timedelta(hours=5, minutes=30))))
    tag, back = decode(encode("lineage/4", [kolkata]))
    assert tag == "lineage/4" and back == [row] and row.input_rows == 30
    assert back[0].recorded_at.tzinfo == UTC and back[0].watermark is None
