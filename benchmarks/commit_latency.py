"""When did each Delta commit of a table make events visible? Scenario 2's commit-time latency.

The latency goal is measured "from the event's send time to the Delta commit that makes it visible
(commit timestamps)". ``visible_by_commit`` walks the JSON commits of the partials table behind
``speed.<p>`` written after a given version and returns, per commit, the instant its log file was
written (the moment readers can see it: the file's modification time) and the cumulative count of
a sensor prefix's events in the table after it. A measurement's sensors are new, so every file that
held them before was added after the start; a compaction removes files and adds their fold (net zero).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote


def latest_version(table_dir: Path) -> int:
    """The table's newest commit version (-1 before the first)."""
    versions = [int(c.stem) for c in (table_dir / "_delta_log").glob("*.json")]
    return max(versions, default=-1)


def visible_by_commit(table_dir: Path, after: int, prefix: str) -> list[tuple[float, int]]:
    """``(visible_at, cumulative prefix events)`` for each commit after version ``after``, in order."""
    import duckdb

    counted: dict[str, int] = {}  # file -> its prefix events (files added since ``after``)
    out: list[tuple[float, int]] = []
    total = 0
    commits = sorted((c for c in (table_dir / "_delta_log").glob("*.json") if int(c.stem) > after),
                     key=lambda c: int(c.stem))
    for commit in commits:
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                path = unquote(action["add"]["path"])
                row = duckdb.execute("SELECT sum(event_count) FROM read_parquet(?) WHERE starts_with(sensor_id, ?)",
                                     [str(table_dir / path), prefix]).fetchone()
                counted[path] = int(row[0] or 0) if row else 0
                total += counted[path]
            elif "remove" in action:
                total -= counted.pop(unquote(action["remove"]["path"]), 0)
        out.append((commit.stat().st_mtime, total))
    return out
