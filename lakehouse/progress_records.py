"""``StreamProgress``: one micro-batch of one streaming query, the typed form of an
``ops.stream_progress`` row (``contracts.STREAM_PROGRESS``).

Built from Spark's progress event, from a checkpoint's offset log after a crash, or by the stream
query itself (``spark_jobs.io.progress_recorder``, ``spark_jobs.speed.stream_batch``); read back by
``spark_jobs.io.ops_reader``. Its JSON form (``to_json``/``from_json``) is what a pending append
keeps on disk (``spark_jobs.speed.stream_progress_rows``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lakehouse.contracts import STREAM_PROGRESS

TIMESTAMP_FIELDS = tuple(c for c, t in STREAM_PROGRESS.columns if t == "timestamp")


@dataclass(frozen=True)
class StreamProgress:
    """The columns of ``ops.stream_progress``, in its order (a test holds them equal)."""

    pipeline: str
    query: str  # 'ingest', 'speed', 'alerts'
    query_version: int
    run_id: str  # Spark's run id, or ``progress_recorder.RECOVERED`` for a row rebuilt after a crash
    batch_id: int
    batch_time: datetime | None
    input_rows: int | None
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    watermark: datetime | None
    state_rows: int | None
    rows_dropped_by_watermark: int | None  # the micro-batch's late events
    end_offsets: str | None  # JSON: topic -> partition -> next offset
    latest_offsets: str | None
    recorded_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StreamProgress:
        values: dict[str, Any] = {c: row.get(c) for c in STREAM_PROGRESS.column_names}
        return cls(**values)

    def row(self) -> tuple[Any, ...]:
        """The values of the row, in the contract's column order."""
        return tuple(getattr(self, c) for c in STREAM_PROGRESS.column_names)

    def to_json(self) -> dict[str, Any]:
        return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StreamProgress:
        return cls.from_row({k: datetime.fromisoformat(v).astimezone(UTC) if k in TIMESTAMP_FIELDS and v else v
                             for k, v in data.items()})
