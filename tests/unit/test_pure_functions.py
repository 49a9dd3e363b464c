"""Pure functions of the jobs layer and the definitions layer, without Spark or services:
the serving view's SQL, the suites' expectation specs, Kafka offsets parsing and the speed-version files."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from expectations.suites import expectation_specs
from lakehouse.config import load_config
from lakehouse.contracts import MIN_EVENT_MS, result_columns
from lakehouse.pipeline import load_pipeline
from lakehouse.progress_records import StreamProgress
from spark_jobs.shared.serving_view import served_select, view_sql
from spark_jobs.speed.lag import parse_offsets, topic_offsets

pytestmark = pytest.mark.unit
CUTOFF = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_view_sql_lambda_cuts_batch_and_speed_on_complementary_predicates() -> None:
    p = load_pipeline("sensor_readings")
    sql = view_sql(p, "lambda", 2, CUTOFF, relation=lambda t: f"delta.`/w/{t}`")
    assert "FROM delta.`/w/batch.sensor_readings` b WHERE b.window_end <= TIMESTAMP '2026-03-01 12:00:00" in sql
    # the speed view's fold, inlined over the version's partials, each read by its location
    assert "FROM delta.`/w/speed.sensor_readings__v2__partials` GROUP BY `sensor_id`, `window_start`, `window_end`) s " \
           "WHERE s.window_end > TIMESTAMP '2026-03-01 12:00:00" in sql
    assert "concat('speed.sensor_readings__v2 micro-batch ', s.batch_id) AS as_of" in sql
    assert " UNION ALL " in sql and " JOIN " not in sql  # finality was decided at publish: no join per query
    first_select = sql.split(" FROM ", 1)[0]
    # the batch rows carry what a publish decided (finality, as_of): the view reads batch.<p> itself
    assert first_select == ("SELECT " + ", ".join(f"b.`{c}`" for c in result_columns(p))
                            + ", 'batch' AS source, b.`finality`, b.`as_of`")


def test_published_rows_get_finality_against_the_speed_layer_and_their_versions() -> None:
    p = load_pipeline("sensor_readings")
    sql = served_select(p, "speed.sensor_readings__v2", "batch.sensor_readings__staging", 7)
    assert "FROM batch.sensor_readings__staging b LEFT JOIN speed.sensor_readings__v2 s" in sql
    assert "'batch.sensor_readings v7 (run '" in sql
    assert "abs(b.`avg_temperature` - s.`avg_temperature`) > 1e-09" in sql  # doubles: relative tolerance
    assert "NOT (b.`event_count` <=> s.`event_count`)" in sql  # integers: exact
    assert "s.`sensor_id` IS NULL" in sql  # never published by the speed layer: corrected


def test_view_sql_before_any_batch_run_and_in_kappa_mode() -> None:
    p = load_pipeline("sensor_readings")
    lam = view_sql(p, "lambda", 1, None)
    assert "WHERE b.window_end <= TIMESTAMP '1970-01-01 00:00:00" in lam
    kappa = view_sql(p, "kappa", 1, CUTOFF)
    assert "batch." not in kappa and "UNION" not in kappa
    assert "CASE WHEN s.is_final THEN 'final' ELSE 'provisional' END AS finality" in kappa
    assert "AS `is_final`" in kappa and "is_final" not in lam  # lambda's speed rows are provisional: no second read


def test_expectation_specs_per_kind() -> None:
    p = load_pipeline("sensor_readings")
    bronze = expectation_specs("bronze", p)
    assert ("ExpectColumnValuesToNotBeNull", {"column": "event_id"}) in bronze
    assert ("ExpectColumnValuesToBeBetween", {"column": p.event_time, "min_value": MIN_EVENT_MS,
                                              "max_value": {"$PARAMETER": "max_event_ms"}}) in bronze
    assert ("ExpectColumnValuesToBeBetween", {"column": "temperature", "min_value": -90.0, "max_value": 70.0}) in bronze
    speed = expectation_specs("speed", p)
    assert ("ExpectCompoundColumnsToBeUnique", {"column_list": list(p.grain)}) in speed
    assert ("ExpectColumnValuesToBeBetween",  # min <= avg, on the pair's difference column
            {"column": "avg_temperature_minus_min_temperature", "min_value": 0, "strict_min": False}) in speed
    assert ("ExpectColumnValuesToBeBetween",  # window_end > window_start
            {"column": "window_end_minus_window_start", "min_value": 0, "strict_min": True}) in speed
    assert not [cls for cls, _ in speed if "Pair" in cls]  # pair checks cost GX two Spark jobs each
    assert expectation_specs("serving_gap", p) == [
        ("ExpectColumnValuesToBeBetween", {"column": "missing_windows", "min_value": 0, "max_value": 0})]
    assert "severity" not in expectation_specs("quarantine", p)[0][1]  # GX's default: critical
    with pytest.raises(ValueError, match="unknown table kind"):
        expectation_specs("gold", p)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"t": {"0": 5, "1": 7}}', {"t": {"0": 5, "1": 7}}),
    ("{'t': {'0': 5}}", {"t": {"0": 5}}),  # a Python repr, as some progress rows carry
    (None, {}), ("", {}), ("not offsets", {}),
])
def test_parse_offsets(text: str | None, expected: dict[str, object]) -> None:
    assert parse_offsets(text) == expected


def test_topic_offsets_picks_the_topic_and_casts() -> None:
    row = StreamProgress.from_row({"pipeline": "p", "query": "speed", "query_version": 1, "batch_id": 4,
                                   "end_offsets": '{"sensor-readings": {"0": "12", "1": 3}, "other": {"0": 1}}'})
    assert topic_offsets(row, "sensor-readings") == {"0": 12, "1": 3}
    assert topic_offsets(None, "sensor-readings") == {}


def test_speed_versions_active_previous_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lakehouse import naming
    from lakehouse.speed_versions import (
        active_version,
        next_version,
        previous_version,
        recorded_previous_version,
        set_active_version,
    )

    monkeypatch.setenv("TIDEWATER_DATA_DIR", str(tmp_path))
    cfg = load_config()
    assert (active_version(cfg, "p"), recorded_previous_version(cfg, "p"), previous_version(cfg, "p", 1)) == (1, None, 0)
    for query, version in (("speed", 3), ("stream", 4), ("ingest", 9)):  # ingest versions never count
        naming.checkpoint_dir(cfg, "p", query, version).mkdir(parents=True)
    assert next_version(cfg, "p", 1) == 5
    set_active_version(cfg, "p", 5, previous=1)
    assert (active_version(cfg, "p"), recorded_previous_version(cfg, "p"), previous_version(cfg, "p", 5)) == (5, 1, 1)


def test_blocks_of_micro_batches_alternate_between_two_slots_and_never_use_the_compacted_one() -> None:
    from lakehouse.speed_fold import COMPACT_EVERY, COMPACTED_SLOT, slot_of

    slots = [slot_of(b) for b in range(4 * COMPACT_EVERY)]
    assert slots == [0] * COMPACT_EVERY + [1] * COMPACT_EVERY + [0] * COMPACT_EVERY + [1] * COMPACT_EVERY
    assert COMPACTED_SLOT not in {slot_of(b) for b in range(10_000)}


def test_scratch_folders_of_gone_drivers_are_the_stale_ones() -> None:
    from infra.jvm_scratch import stale_folders

    names = ["pid-10", "pid-11", "thrift", "pid-x", "notes", "pid-12"]
    assert stale_folders(names, alive={11}) == ["pid-10", "pid-12"]
    assert stale_folders(names, alive={10, 11, 12}) == []


@pytest.mark.parametrize(("location", "expected"), [
    ("file:/tmp/w/bronze.db/t", Path("/tmp/w/bronze.db/t/_delta_log")),
    ("file:///tmp/w/a%20b", Path("/tmp/w/a b/_delta_log")),
    ("/tmp/w/t", Path("/tmp/w/t/_delta_log")),
    ("s3a://bucket/t", None), ("hdfs://nn/t", None), ("", None), (None, None), ("relative/t", None),
])
def test_local_log_dir_of_a_table_location(location: str | None, expected: Path | None) -> None:
    from spark_jobs.io.delta_io import local_log_dir

    assert local_log_dir(location) == expected


def test_bronze_log_files_are_kept_back_to_the_published_runs_commit() -> None:
    from datetime import timedelta

    from spark_jobs.speed.log_cleanup import BRONZE_MARGIN_SECONDS, KEEP_SECONDS, bronze_keep_after, due

    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    margin = timedelta(seconds=BRONZE_MARGIN_SECONDS)
    assert bronze_keep_after(now, "kappa", now - timedelta(days=3)) == now - timedelta(seconds=KEEP_SECONDS)
    assert bronze_keep_after(now, "lambda", None) == now - margin
    assert bronze_keep_after(now, "lambda", now - timedelta(days=3)) == now - timedelta(days=3) - margin
    assert bronze_keep_after(now, "lambda", now + timedelta(hours=1)) == now - margin  # a clock ahead: no later
    assert [b for b in range(300) if due(b)] == [99, 199, 299]


def test_every_streaming_query_cleans_the_logs_of_the_tables_it_commits_to() -> None:
    from lakehouse.contracts import STREAM_PROGRESS
    from spark_jobs.speed.log_cleanup import stream_tables

    progress = STREAM_PROGRESS.name
    # the stateless stream of a lambda job, and of a Kappa replay (speed role only)
    assert stream_tables("p", ["ingest", "speed"], "partials.p") == ["partials.p", progress, "quarantine.p", "bronze.p"]
    assert stream_tables("p", ["speed"], "partials.p__v2") == ["partials.p__v2", progress]
    # a session pipeline's two queries: ingest (no table of its own), speed (its speed table)
    assert stream_tables("p", ["ingest"], None) == ["quarantine.p", "bronze.p"]
    assert stream_tables("p", ["speed"], "speed.p") == ["speed.p", progress]


def test_the_batch_layers_oldest_needed_bronze_version_and_its_checkpoint(tmp_path: Path) -> None:
    from lakehouse.run_records import BatchRun
    from spark_jobs.speed.log_cleanup import checkpoint_before, protected_bronze_version

    def run(status: str, version: int, at: int) -> BatchRun:
        return BatchRun.from_row({"status": status, "bronze_version": version,
                                  "published_at": datetime(2026, 11, 28, at, tzinfo=UTC)})

    assert protected_bronze_version([]) is None
    assert protected_bronze_version([run("failed", 3, 1)]) is None
    assert protected_bronze_version([run("staged", 40, 1), run("staged", 30, 2)]) == 30
    assert protected_bronze_version([run("staged", 40, 1), run("validated", 30, 2)]) == 30  # validated: still to publish
    assert protected_bronze_version([run("published", 20, 1), run("published", 25, 2), run("staged", 30, 3)]) == 25
    for name in ("00000000000000000100.checkpoint.parquet", "00000000000000000200.checkpoint.parquet",
                 "00000000000000000150.json", "_last_checkpoint"):
        (tmp_path / name).touch()
    assert checkpoint_before(tmp_path, 99) is None
    assert checkpoint_before(tmp_path, 199).name == "00000000000000000100.checkpoint.parquet"
    assert checkpoint_before(tmp_path, 200).name == "00000000000000000200.checkpoint.parquet"
