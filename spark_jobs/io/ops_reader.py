"""Read small Delta tables (the ``ops.*`` facts) without starting Spark.

Status commands and Airflow sensors run every few minutes; a JVM start per call would cost
~20 s. This reader replays the table's ``_delta_log`` (JSON commits, newest checkpoint first)
to find the live Parquet files and reads them with pyarrow.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.contracts import STREAM_PROGRESS
from lakehouse.errors import TidewaterError
from lakehouse.progress_records import StreamProgress


def table_path(cfg: TidewaterConfig, table: str) -> Path:
    db, name = table.split(".", 1)
    return naming.warehouse_dir(cfg) / f"{db}.db" / name


def _replay_log(path: Path, on_action: Any, upto: int | None = None, kinds: tuple[str, ...] = ("add", "txn")) -> bool:
    """Feed every action of the table's log (newest checkpoint, then later JSON commits) to
    ``on_action``, in commit order; with ``upto``, only the log of version ``upto``. The checkpoint's
    actions are read only of ``kinds``. Returns whether the commits replayed were contiguous up to the
    last one (or to ``upto``)."""
    log = path / "_delta_log"
    if not log.is_dir():
        return upto is None
    start = 0
    checkpoints = [c for c in sorted(log.glob("*.checkpoint.parquet"), key=lambda c: int(c.name.split(".")[0]))
                   if upto is None or int(c.name.split(".")[0]) <= upto]
    if checkpoints:
        import pyarrow.parquet as pq

        newest = checkpoints[-1]
        start = int(newest.name.split(".")[0]) + 1
        columns = [c for c in kinds if c in pq.read_schema(newest).names]
        for row in pq.read_table(newest, columns=columns).to_pylist():
            on_action({k: v for k, v in row.items() if v})
    expected, contiguous = start, True
    for commit in sorted(log.glob("*.json"), key=lambda c: int(c.stem)):
        version = int(commit.stem)
        if version >= start and (upto is None or version <= upto):
            contiguous = contiguous and version == expected
            expected = version + 1
            for line in commit.read_text().splitlines():
                on_action(json.loads(line))
    return contiguous and (upto is None or expected == upto + 1)


def snapshot_stats(path: Path, version: int, columns: list[str]) -> dict[str, Any] | None:
    """``num_records`` and the latest instant of each of the timestamp ``columns`` (aware datetimes)
    of a Delta table at ``version``, from its log's file statistics: no scan.
    None when the log cannot tell (a live file without statistics, a gap in the log)."""
    files: dict[str, Any] = {}

    def on_action(action: dict[str, Any]) -> None:
        if "add" in action:
            files[action["add"]["path"]] = action["add"].get("stats")
        elif "remove" in action:
            files.pop(action["remove"]["path"], None)

    if not _replay_log(path, on_action, upto=version):
        return None
    out: dict[str, Any] = {"num_records": 0, **{c: None for c in columns}}
    for stats_text in files.values():
        stats = json.loads(stats_text) if stats_text else {}
        if "numRecords" not in stats:
            return None
        out["num_records"] += int(stats["numRecords"])
        for c in columns:
            top = stats.get("maxValues", {}).get(c)
            if top is None and stats["numRecords"] > stats.get("nullCount", {}).get(c, 0):
                return None
            if top is not None and (out[c] is None or datetime.fromisoformat(top) > out[c]):
                out[c] = datetime.fromisoformat(top)
    return out


def table_properties(path: Path) -> dict[str, str]:
    """The table properties of the Delta table at ``path`` (its newest ``metaData`` action: what ``SHOW
    TBLPROPERTIES`` lists of Delta's own), read from its log without Spark; empty when there is no table."""
    found: dict[str, Any] = {}

    def on_action(action: dict[str, Any]) -> None:
        if "metaData" in action:
            found["configuration"] = action["metaData"].get("configuration") or {}

    _replay_log(path, on_action, kinds=("metaData",))
    configuration = found.get("configuration") or {}
    return dict(configuration) if isinstance(configuration, dict) else {k: v for k, v in configuration}


def _logical_file(entry: dict[str, Any]) -> tuple[str, tuple[Any, ...] | None]:
    """A logical file of the Delta protocol: its path and its deletion vector's id. A MERGE that marks rows
    removes ``(path, old vector)`` and adds ``(path, new vector)`` in one commit, in either order."""
    dv = entry.get("deletionVector")
    return entry["path"], (dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset")) if dv else None


def _live_adds(path: Path) -> dict[tuple[str, Any], dict[str, Any]]:
    """The ``add`` action of every logical file of the table's current version."""
    files: dict[tuple[str, Any], dict[str, Any]] = {}

    def on_action(action: dict[str, Any]) -> None:
        if "add" in action:
            files[_logical_file(action["add"])] = action["add"]
        elif "remove" in action:
            files.pop(_logical_file(action["remove"]), None)

    _replay_log(path, on_action)
    return files


def live_files(path: Path) -> list[Path]:
    """The data files of the table's current version. Fails closed on a file with a deletion vector: its
    rows are not all live, and the callers read every row of a file (``read_rows``) or need none."""
    files = _live_adds(path)
    marked = sum(1 for _, dv in files if dv is not None)
    if marked:
        raise TidewaterError(f"ops_reader: {marked} live file(s) of {path} have deletion vectors; read that table "
                             "with Spark, which applies them")
    return [path / unquote(f) for f, _ in files]


def column_bounds(path: Path, column: str) -> tuple[Any, Any] | None:
    """The least and greatest value of ``column`` in the table's live files, from their statistics (strings
    longer than 32 characters are cut there); None when a file has no statistics of it (or none has rows)."""
    lows, highs = [], []
    for add in _live_adds(path).values():
        stats = json.loads(add.get("stats") or "null")
        if not isinstance(stats, dict) or "numRecords" not in stats:
            return None  # a file without statistics could hold any value
        if not stats["numRecords"]:
            continue
        low, high = stats.get("minValues", {}).get(column), stats.get("maxValues", {}).get(column)
        if low is None or high is None:
            return None
        lows.append(low)
        highs.append(high)
    return (min(lows), max(highs)) if lows else None


def txn_versions(path: Path) -> dict[str, int]:
    """``txnAppId -> last committed txnVersion`` of a Delta table (idempotent writers' high-water marks)."""
    versions: dict[str, int] = {}

    def on_action(action: dict[str, Any]) -> None:
        if "txn" in action:
            versions[action["txn"]["appId"]] = int(action["txn"]["version"])

    _replay_log(path, on_action)
    return versions


def read_rows(cfg: TidewaterConfig, table: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows of an unpartitioned ``ops.*`` table, from its live files (``columns``: only those). One
    file at a time (``ParquetFile``, not ``read_table``, whose dataset layer imports pandas: about 1 s of a
    command's start on 2 cores). Spark's timestamps come back as pandas ``Timestamp``s (nanoseconds)."""
    return rows_of(table_path(cfg, table), columns)


def rows_of(path: Path, columns: list[str] | None = None, utc: bool = False) -> list[dict[str, Any]]:
    """``read_rows`` of the table at ``path``; with ``utc``, its instants as aware UTC ``datetime``s (Spark
    writes a timestamp as a UTC instant: INT96, which pyarrow reads as naive, or adjusted to UTC)."""
    files = live_files(path)
    if not files:
        return []
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for f in files:
        rows.extend(pq.ParquetFile(f).read(columns=columns).to_pylist())
    return [{k: _utc(v) for k, v in row.items()} for row in rows] if utc else rows


def _utc(value: Any) -> Any:
    if not isinstance(value, datetime):
        return value
    value = value.to_pydatetime() if hasattr(value, "to_pydatetime") else value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def progress_rows(cfg: TidewaterConfig) -> list[StreamProgress]:
    """Every ``ops.stream_progress`` row, typed, read without Spark."""
    return [StreamProgress.from_row(r) for r in read_rows(cfg, STREAM_PROGRESS.name)]


def latest_progress(cfg: TidewaterConfig, pipeline: str, query: str = "speed",
                    version: int | None = None) -> StreamProgress | None:
    """Newest ``ops.stream_progress`` row of a pipeline's query (and version), or None before its first batch."""
    rows = [r for r in progress_rows(cfg) if r.pipeline == pipeline and r.query == query
            and (version is None or r.query_version == version)]
    return max(rows, key=lambda r: (r.recorded_at, r.batch_id)) if rows else None
