"""Pure rules behind the trust fixes: UTC literals, the batch cutoff, checkpoint lineage facts,
recovered progress rows, and the quality gate failing closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from infra.utc import sql_timestamp
from spark_jobs.batch.bronze import batch_cutoff
from spark_jobs.io import lineage
from spark_jobs.io.progress_recorder import progress_row, recovered_row

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_sql_timestamp_names_the_instant_with_an_explicit_offset() -> None:
    kolkata = timezone(timedelta(hours=5, minutes=30))
    instant = datetime(2026, 3, 1, 17, 30, tzinfo=kolkata)
    assert sql_timestamp(instant) == "TIMESTAMP '2026-03-01 12:00:00.000000+00:00'"


def test_pinning_makes_naive_datetimes_utc_and_survives_mktime() -> None:
    """After pinning, a naive datetime is UTC, also after ``time.mktime`` (which re-reads ``TZ``: PySpark's
    ``createDataFrame`` calls it for naive timestamps; restoring the host's ``TZ`` once flipped the zone)."""
    code = ("import os, time; from datetime import datetime; from infra.utc import pin_process_to_utc, sql_timestamp;"
            "pin_process_to_utc(); time.mktime(datetime(2026, 3, 1).timetuple());"
            "print(sql_timestamp(datetime(2026, 3, 1, 12, 0)), os.environ['TZ'], time.timezone, "
            "os.environ['TIDEWATER_HOST_TZ'])")
    env = {k: v for k, v in os.environ.items() if k != "TIDEWATER_HOST_TZ"}
    out = subprocess.run([sys.executable, "-c", code], env={**env, "TZ": "Asia/Kolkata"}, cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["TIMESTAMP", "'2026-03-01", "12:00:00.000000+00:00'", "UTC", "0", "Asia/Kolkata"]


def test_cutoff_follows_arrival_when_event_time_runs_ahead() -> None:
    arrived = datetime(2026, 3, 1, 12, 0)
    fast_clock = arrived + timedelta(minutes=2)  # within max_future_skew, still must not move the cutoff
    assert batch_cutoff(fast_clock, arrived, 120) == arrived - timedelta(minutes=2)
    old_history = arrived - timedelta(days=2)  # catch-up of old events: event time rules
    assert batch_cutoff(old_history, arrived, 120) == old_history - timedelta(minutes=2)
    assert batch_cutoff(old_history, None, 60) == old_history - timedelta(minutes=1)


def _checkpoint(root: Path, batches: dict[int, dict[str, int]], committed: list[int]) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": "3f2a-query"}))
    for b, offsets in batches.items():
        meta = {"batchWatermarkMs": 1_772_366_400_000 + b, "batchTimestampMs": 1_772_366_460_000, "conf": {}}
        (root / "offsets" / str(b)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps({'t': offsets})}")
    for b in committed:
        (root / "commits" / str(b)).write_text("v1\n{}")
    return root


def test_checkpoint_lineage_facts(tmp_path: Path) -> None:
    assert lineage.is_new(tmp_path / "missing")
    ck = _checkpoint(tmp_path / "ck", {0: {"0": 5, "1": 3}, 1: {"0": 9, "1": 4}, 2: {"0": 12, "1": 4}}, [0, 1])
    assert not lineage.is_new(ck)
    assert lineage.query_id(ck) == "3f2a-query"
    assert lineage.committed_batches(ck) == [0, 1]  # batch 2 was planned, not committed
    meta, end = lineage.offset_log_entry(ck, 1)
    assert end == {"t": {"0": 9, "1": 4}} and meta["batchWatermarkMs"] == 1_772_366_400_001


def test_what_a_stopped_version_may_serve_includes_its_last_planned_micro_batch(tmp_path: Path) -> None:
    """A stop can interrupt a micro-batch after its Delta commit and before Spark's commit log entry:
    the replay switch must wait for the planned end (2 -> 12), not the committed one (1 -> 9); a CI run
    of the Kappa test saw the windows of such a micro-batch vanish at the switch."""
    ck = _checkpoint(tmp_path / "ck", {0: {"0": 5, "1": 3}, 1: {"0": 9, "1": 4}, 2: {"0": 12, "1": 4}}, [0, 1])
    assert lineage.last_committed_offsets(ck, "t") == {"0": 9, "1": 4}
    assert lineage.last_planned_offsets(ck, "t") == {"0": 12, "1": 4}
    assert lineage.last_planned_offsets(tmp_path / "missing", "t") is None
    committed_by_progress = {"0": 9, "1": 6, "2": 1}  # another lineage of the version went further in "1"
    assert lineage.furthest(committed_by_progress, lineage.last_planned_offsets(ck, "t"), None) == {
        "0": 12, "1": 6, "2": 1}
    assert lineage.furthest(None, None) is None


def test_recovered_row_is_built_from_the_offset_log_and_marks_unmeasured_metrics_null(tmp_path: Path) -> None:
    ck = _checkpoint(tmp_path / "ck", {0: {"0": 5, "1": 3}, 1: {"0": 9, "1": 4}}, [0, 1])
    meta, end = lineage.offset_log_entry(ck, 1)
    row = recovered_row("sensor_readings", "speed", 2, 1, meta, end, lineage.offset_log_entry(ck, 0)[1])
    assert row.input_rows == 5 and row.run_id == "recovered" and row.batch_id == 1
    assert row.rows_dropped_by_watermark is None and row.batch_duration_ms is None
    assert row.watermark == datetime.fromtimestamp(1_772_366_400.001, UTC)
    assert json.loads(row.end_offsets or "") == {"t": {"0": 9, "1": 4}}


def test_progress_row_sums_state_operators_and_keeps_instants_aware() -> None:
    event = {"runId": "r1", "batchId": 7, "timestamp": "2026-03-01T12:00:00.000Z", "numInputRows": 10,
             "durationMs": {"triggerExecution": 1500}, "eventTime": {"watermark": "2026-03-01T11:58:00.000Z"},
             "stateOperators": [{"numRowsTotal": 4, "numRowsDroppedByWatermark": 2}, {"numRowsTotal": 1}],
             "sources": [{"endOffset": {"t": {"0": 3}}, "latestOffset": '{"t": {"0": 5}}'}]}
    row = progress_row("sensor_readings", "speed", 1, event)
    assert (row.batch_id, row.input_rows, row.state_rows, row.rows_dropped_by_watermark) == (7, 10, 5, 2)
    assert row.watermark == datetime(2026, 3, 1, 11, 58, tzinfo=UTC)
    assert json.loads(row.latest_offsets or "") == {"t": {"0": 5}}


def test_quality_gate_fails_closed_without_the_expectations_package() -> None:
    """Publishing without an audit is impossible: the gate raises instead of being skipped."""
    code = ("import sys; sys.modules['expectations'] = None; from spark_jobs.batch import wap;"
            "wap.gate_outcome(None, None, None, None); print('PUBLISHED WITHOUT AUDIT')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode != 0 and "PUBLISHED WITHOUT AUDIT" not in proc.stdout
    assert "ModuleNotFoundError" in proc.stderr or "ImportError" in proc.stderr


def test_ingest_floors_never_skip_a_record_of_a_micro_batch_cut_between_its_two_commits() -> None:
    # a kill -9 after quarantine's commit and before bronze's (the order StreamBatch.ingest writes in):
    # bronze resumes after ITS last offset, not after quarantine's, or records 11..15 would be lost
    floors = lineage.ingest_floors({"0": 11, "1": 40}, {"0": 16})
    assert floors == {"ingest": {"0": 11, "1": 40}, "quarantine": {"0": 16, "1": 40}}
    assert json.loads(lineage.starting_json("t", [0, 1, 2], list(floors.values()))) == {"t": {"0": 11, "1": 40, "2": -2}}
    # quarantine behind bronze (its micro-batch had no unusable record in partition 0): quarantine
    # holds every unusable record below bronze's floor, so it starts there too, and never re-writes one
    assert lineage.ingest_floors({"0": 101}, {"0": 51}) == {"ingest": {"0": 101}, "quarantine": {"0": 101}}
    assert lineage.ingest_floors(None, None) == {"ingest": None, "quarantine": None}
    assert lineage.ingest_floors(None, {"2": 7}) == {"ingest": None, "quarantine": {"2": 7}}


def test_a_window_ends_between_two_cutoffs_only_across_a_slide_boundary() -> None:
    """An incremental run looks for newly completed windows only when one can have ended since the last
    cutoff: tumbling windows end on whole sizes since the epoch, sliding ones on whole slides, whatever the
    zone the cutoffs are given in (the boundary is an instant). A cutoff on a boundary counts the window
    ending there; one that did not move counts none."""
    import dataclasses

    from lakehouse.pipeline import Window, load_pipeline
    from spark_jobs.transforms.incremental import window_ends_between

    minute = load_pipeline("sensor_readings")
    assert minute.window == Window(type="tumbling", size="1 minute")
    noon = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert not window_ends_between(minute, noon, noon + timedelta(seconds=59, microseconds=999_999))
    assert window_ends_between(minute, noon - timedelta(microseconds=1), noon)
    assert not window_ends_between(minute, noon, noon)
    assert not window_ends_between(minute, noon + timedelta(seconds=30), noon + timedelta(seconds=10))
    assert window_ends_between(minute, noon + timedelta(seconds=50), noon + timedelta(minutes=1, seconds=5))
    kolkata = timezone(timedelta(hours=5, minutes=30))
    assert window_ends_between(minute, datetime(2026, 3, 1, 17, 29, 59, tzinfo=kolkata), noon)
    sliding = dataclasses.replace(minute, window=Window(type="sliding", size="10 minutes", slide="5 minutes"))
    assert not window_ends_between(sliding, noon + timedelta(minutes=1), noon + timedelta(minutes=4, seconds=59))
    assert window_ends_between(sliding, noon + timedelta(minutes=1), noon + timedelta(minutes=5))
