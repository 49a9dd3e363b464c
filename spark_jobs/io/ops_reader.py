"""Read small Delta tables (the ``ops.*`` facts) without starting Spark.

Status commands and Airflow sensors run every few minutes; a JVM start per call would cost
~20 s. This reader replays the table's ``_delta_log`` (JSON commits, newest checkpoint first)
to find the live Parquet files and reads them with pyarrow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lakehouse import naming
from lakehouse.config import TidewaterConfig


def table_path(cfg: TidewaterConfig, table: str) -> Path:
    db, name = table.split(".", 1)
    return naming.warehouse_dir(cfg) / f"{db}.db" / name


def _replay_log(path: Path, on_action: Any) -> None:
    """Feed every action of the table's log (newest checkpoint, then later JSON commits) to
    ``on_action``, in commit order."""
    log = path / "_delta_log"
    if not log.is_dir():
        return
    start = 0
    checkpoints = sorted(log.glob("*.checkpoint.parquet"))
    if checkpoints:
        import pyarrow.parquet as pq

        newest = checkpoints[-1]
        start = int(newest.name.split(".")[0]) + 1
        columns = [c for c in ("add", "txn") if c in pq.read_schema(newest).names]
        for row in pq.read_table(newest, columns=columns).to_pylist():
            on_action({k: v for k, v in row.items() if v})
    for commit in sorted(log.glob("*.json")):
        if int(commit.stem) >= start:
            for line in commit.read_text().splitlines():
                on_action(json.loads(line))


def live_files(path: Path) -> list[Path]:
    files: dict[str, bool] = {}

    def on_action(action: dict[str, Any]) -> None:
        if "add" in action:
            files[action["add"]["path"]] = True
        elif "remove" in action:
            files.pop(action["remove"]["path"], None)

    _replay_log(path, on_action)
    return [path / unquote(f) for f in files]


def txn_versions(path: Path) -> dict[str, int]:
    """``txnAppId -> last committed txnVersion`` of a Delta table (idempotent writers' high-water marks)."""
    versions: dict[str, int] = {}

    def on_action(action: dict[str, Any]) -> None:
        if "txn" in action:
            versions[action["txn"]["appId"]] = int(action["txn"]["version"])

    _replay_log(path, on_action)
    return versions


def read_rows(cfg: TidewaterConfig, table: str) -> list[dict[str, Any]]:
    files = live_files(table_path(cfg, table))
    if not files:
        return []
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def latest_progress(cfg: TidewaterConfig, pipeline: str, query: str = "speed", version: int | None = None
                    ) -> dict[str, Any]:
    """Newest ``ops.stream_progress`` row of a pipeline's query (and version), or {} if none yet."""
    rows = [r for r in read_rows(cfg, "ops.stream_progress") if r["pipeline"] == pipeline and r["query"] == query
            and (version is None or r["query_version"] == version)]
    if not rows:
        return {}
    last = max(rows, key=lambda r: (r["recorded_at"], r["batch_id"]))
    return {
        "last_batch_time": last["batch_time"], "watermark": last["watermark"],
        "input_rows_per_second": last["input_rows_per_second"],
        "processed_rows_per_second": last["processed_rows_per_second"],
        "end_offsets": last["end_offsets"], "batch_id": last["batch_id"], "recorded_at": last["recorded_at"],
    }
