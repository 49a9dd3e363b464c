"""Bronze's facts read from a Delta log's file statistics (``ops_reader.snapshot_stats``): the log
replayed up to one version, removes honoured, and no answer where the log cannot give a sure one.
(The integration test ``test_batch_incremental`` checks the same facts against a Spark scan of a real table.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spark_jobs.io.ops_reader import snapshot_stats

pytestmark = pytest.mark.unit
COLUMNS = ["event_time", "kafka_timestamp"]


def _add(path: str, n: int, top: str | None, arrived: str) -> dict:
    stats = {"numRecords": n, "maxValues": {"kafka_timestamp": arrived, **({"event_time": top} if top else {})},
             "nullCount": {"event_time": n if top is None else 0, "kafka_timestamp": 0}}
    return {"add": {"path": path, "dataChange": True, "stats": json.dumps(stats)}}


def _log(table: Path, commits: dict[int, list[dict]]) -> Path:
    log = table / "_delta_log"
    log.mkdir(parents=True)
    for version, actions in commits.items():
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions))
    return table


def test_facts_at_a_version_with_removes_and_offsets(tmp_path: Path) -> None:
    table = _log(tmp_path / "t", {
        0: [{"metaData": {}}, _add("a", 10, "2026-03-01T12:00:00.000Z", "2026-03-01T12:00:01.000Z")],
        1: [_add("b", 5, "2026-03-01T12:10:00.000+00:00", "2026-03-01T12:10:05.000Z")],
        2: [{"remove": {"path": "b"}}, _add("c", 7, "2026-03-01T14:00:00.000+02:00", "2026-03-01T12:20:00.000Z")],
    })
    at1 = snapshot_stats(table, 1, COLUMNS)
    assert at1 == {"num_records": 15, "event_time": datetime(2026, 3, 1, 12, 10, tzinfo=UTC),
                   "kafka_timestamp": datetime(2026, 3, 1, 12, 10, 5, tzinfo=UTC)}
    at2 = snapshot_stats(table, 2, COLUMNS)  # b removed; 14:00+02:00 is 12:00 UTC, not later than a's
    assert at2 is not None and at2["num_records"] == 17
    assert at2["kafka_timestamp"] == datetime(2026, 3, 1, 12, 20, tzinfo=UTC)
    assert at2["event_time"] == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_no_answer_without_statistics_or_with_a_gap(tmp_path: Path) -> None:
    no_stats = _log(tmp_path / "a", {0: [{"add": {"path": "x", "dataChange": True}}]})
    assert snapshot_stats(no_stats, 0, COLUMNS) is None
    all_null = _log(tmp_path / "b", {0: [_add("x", 3, None, "2026-03-01T12:00:00.000Z")]})
    assert snapshot_stats(all_null, 0, COLUMNS) == {"num_records": 3, "event_time": None,
                                                    "kafka_timestamp": datetime(2026, 3, 1, 12, tzinfo=UTC)}
    gap = _log(tmp_path / "c", {0: [_add("x", 1, "2026-03-01T12:00:00.000Z", "2026-03-01T12:00:00.000Z")],
                                2: [_add("y", 1, "2026-03-01T12:00:00.000Z", "2026-03-01T12:00:00.000Z")]})
    assert snapshot_stats(gap, 2, COLUMNS) is None
    assert snapshot_stats(gap, 5, COLUMNS) is None  # a version the log does not reach


def test_commit_info_is_read_from_the_commit_file(tmp_path: Path) -> None:
    """What a batch run reads of its own staging write (``batch.staged_counts``): the commit's
    ``operationMetrics``, from its log file; a commit without ``commitInfo`` gives {} (then the run counts)."""
    from spark_jobs.io.delta_io import commit_info, commit_operation, latest_version

    info = {"operation": "CREATE OR REPLACE TABLE AS SELECT", "operationMetrics": {"numOutputRows": "264000"}}
    table = _log(tmp_path / "t", {0: [{"metaData": {}}, {"commitInfo": {"operation": "CREATE TABLE"}}],
                                  1: [{"commitInfo": info}, _add("a", 3, None, "2026-03-01T12:00:01.000Z")],
                                  2: [_add("b", 1, None, "2026-03-01T12:00:02.000Z")]})
    assert latest_version(table) == 2
    assert commit_info(table, 1)["operationMetrics"]["numOutputRows"] == "264000"
    assert commit_operation(table, 1) == "CREATE OR REPLACE TABLE AS SELECT"
    assert commit_info(table, 2) == {} and commit_operation(table, 2) is None


def _op_file(path: str, n: int, low: str | None, high: str | None, dv: str | None = None) -> dict:
    stats: dict = {"numRecords": n}
    if low is not None:
        stats.update(minValues={"op": low}, maxValues={"op": high})
    add: dict = {"path": path, "dataChange": True, "stats": json.dumps(stats)}
    if dv:
        add["deletionVector"] = {"storageType": "u", "pathOrInlineDv": dv, "offset": 1, "sizeInBytes": 34, "cardinality": 1}
    return {"add": add}


def test_column_bounds_over_live_files_and_none_when_a_file_cannot_tell(tmp_path: Path) -> None:
    """What ``batch.publish.staged_ops`` reads: a file without statistics of the column (or none at all)
    makes the answer unknown, not narrower; an empty file does not count."""
    from spark_jobs.io.ops_reader import column_bounds

    table = _log(tmp_path / "t", {
        0: [{"metaData": {}}, _op_file("a", 4, "update", "update"), _op_file("e", 0, None, None)],
        1: [{"remove": {"path": "z"}}, _op_file("b", 2, "delete", "update")],
    })
    assert column_bounds(table, "op") == ("delete", "update")
    no_stats = _log(tmp_path / "u", {0: [{"add": {"path": "a", "dataChange": True}}, _op_file("b", 2, "update", "upsert")]})
    assert column_bounds(no_stats, "op") is None
    other = _log(tmp_path / "v", {0: [_op_file("a", 3, None, None)]})
    assert column_bounds(other, "op") is None


def test_live_files_follow_deletion_vectors_and_refuse_them(tmp_path: Path) -> None:
    """A MERGE with deletion vectors removes (path, old vector) and adds (path, new vector) in one commit, in
    either order: the file stays live. Its rows are not all live, so ``live_files`` refuses to list it."""
    from lakehouse.errors import TidewaterError
    from spark_jobs.io.ops_reader import live_files

    table = _log(tmp_path / "t", {
        0: [_op_file("a", 4, "update", "update"), _op_file("b", 4, "update", "update")],
        1: [_op_file("b", 4, "update", "update", dv="dv1"), {"remove": {"path": "b"}}],
    })
    with pytest.raises(TidewaterError, match="1 live file.*deletion vectors"):
        live_files(table)
    plain = _log(tmp_path / "u", {0: [_op_file("a", 1, "x", "x"), _op_file("b", 1, "x", "x")], 1: [{"remove": {"path": "b"}}]})
    assert live_files(plain) == [plain / "a"]


def test_rows_of_gives_spark_instants_as_aware_utc_whatever_the_parquet_type(tmp_path: Path) -> None:
    """``batch_runs.runs`` reads ``ops.batch_runs`` this way (no Spark job): Spark writes a timestamp as INT96,
    which pyarrow reads as a naive value, or as microseconds adjusted to UTC; both are the same UTC instant."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark_jobs.io.ops_reader import rows_of

    at = datetime(2026, 3, 29, 1, 30, 15, 123456, tzinfo=UTC)
    table = _log(tmp_path / "t", {0: [{"add": {"path": "int96.parquet", "dataChange": True}},
                                      {"add": {"path": "micros.parquet", "dataChange": True}}]})
    naive = pa.table({"run": ["a"], "at": pa.array([at.replace(tzinfo=None)], pa.timestamp("us"))})
    pq.write_table(naive, table / "int96.parquet", use_deprecated_int96_timestamps=True)
    pq.write_table(pa.table({"run": ["b"], "at": pa.array([at], pa.timestamp("us", tz="UTC"))}), table / "micros.parquet")
    rows = sorted(rows_of(table, utc=True), key=lambda r: r["run"])
    assert rows == [{"run": "a", "at": at}, {"run": "b", "at": at}]
    assert all(type(r["at"]) is datetime for r in rows)
    assert [r["run"] for r in rows_of(table, ["run"])] in (["a", "b"], ["b", "a"])
