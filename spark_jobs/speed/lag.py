"""A pipeline's consumer lag: the offsets each speed query committed (from ``ops.stream_progress``, read
without Spark) against the topic's end offsets in Kafka."""

from __future__ import annotations

import ast
import json
from typing import Any

from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from lakehouse.progress_records import StreamProgress
from lakehouse.speed_versions import active_version
from spark_jobs.io.kafka_admin import offsets
from spark_jobs.io.ops_reader import latest_progress


def parse_offsets(text: str | None) -> dict[str, Any]:
    """Kafka source offsets JSON ({topic: {partition: offset}}); {} when absent or unreadable."""
    if not text:
        return {}
    try:
        return dict(json.loads(text))
    except ValueError:
        try:
            return dict(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return {}


def committed_offsets(cfg: TidewaterConfig, p: Pipeline, query: str = "speed",
                      version: int | None = None) -> dict[str, int] | None:
    """{partition: offset} that ``query`` (version) has committed, from ``ops.stream_progress``;
    None before its first batch."""
    last = latest_progress(cfg, p.name, query=query, version=version)
    if last is None:
        return None
    return topic_offsets(last, p.topic)


def topic_offsets(progress: StreamProgress | None, topic: str) -> dict[str, int]:
    """{partition: offset} of ``topic`` in a progress row's ``end_offsets`` ({} when absent)."""
    ends = progress.end_offsets if progress is not None else None
    return {str(k): int(v) for k, v in parse_offsets(ends).get(topic, {}).items()}


def lag_records(cfg: TidewaterConfig, p: Pipeline, query: str = "speed", version: int | None = None) -> int | None:
    """Records in the topic that ``query`` (version) has not yet committed; None before its first batch."""
    if version is None and query == "speed":
        version = active_version(cfg, p.name)
    committed = committed_offsets(cfg, p, query, version)
    if committed is None:
        return None
    return sum(partition_lag(cfg, p.topic, committed).values())


def partition_lag(cfg: TidewaterConfig, topic: str, committed: dict[str, int]) -> dict[str, int]:
    """{partition: records in ``topic`` after the ``committed`` offset} (a partition never committed
    counts from its earliest retained offset)."""
    return lag_after(offsets(cfg, topic), committed)


def lag_after(ends: dict[int, tuple[int, int]], committed: dict[str, int]) -> dict[str, int]:
    """{partition: records after ``committed``} given ``offsets``' (earliest, end) per partition."""
    return {str(part): max(0, end - committed.get(str(part), begin)) for part, (begin, end) in ends.items()}
