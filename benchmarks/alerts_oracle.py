"""A plain-Python oracle of a pipeline's alerts: every pattern of its ``alerts:`` section over a list of
events seen all at once (no arrival order, no state, no watermark steps), as the docs define them:

* sequence: in event-time order (ties by id), the first ``first`` event, then the first ``then`` event
  strictly later and at most ``within`` after it; the next search starts after that ``then`` event;
* threshold: ``count`` ``when`` events since the last alert whose times span at most ``within``;
* absence: an event whose next event (of the key) is ``within`` or more later, or has none.

An alert is produced once the watermark is past the time it is decided at: ``final_watermark_ms`` (the
alerts query's last watermark) keeps only those. ``events``: the on-time events, each id once.
The alerts tests check the alerts query and its state machines against it; scenario 9 checks both Tidewater
and Flink's ``MATCH_RECOGNIZE`` against it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

from lakehouse.alert_spec import AlertPattern
from lakehouse.pipeline import Pipeline

Alert = tuple[str, str, str, tuple[str, ...], tuple[int, ...]]  # alert_id, pattern, key, event ids, event times


def expected_alerts(p: Pipeline, events: list[dict[str, Any]], final_watermark_ms: int) -> set[Alert]:
    out: set[Alert] = set()
    for pattern in p.alerts:
        by_key: dict[str, list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)
        for e in events:
            by_key[str(e[pattern.key])].append((int(e[p.event_time]), str(e[p.event_id]), e))
        for key, rows in by_key.items():
            for matched, decided_at in _matches(pattern, sorted(rows, key=lambda r: (r[0], r[1]))):
                if decided_at < final_watermark_ms:
                    ids, times = tuple(m[1] for m in matched), tuple(m[0] for m in matched)
                    digest = hashlib.sha256(json.dumps([pattern.name, key, *ids]).encode()).hexdigest()[:32]
                    out.add((digest, pattern.name, key, ids, times))
    return out


def _holds(condition: Any, event: dict[str, Any]) -> bool:
    return bool(condition.apply(event[condition.field]))


def _matches(pattern: AlertPattern, rows: list[tuple[int, str, dict[str, Any]]]) -> list[tuple[list[Any], int]]:
    """(matched rows, the time the alert is decided at) for one key's rows in event-time order."""
    within, found = pattern.within_ms, []
    if pattern.kind == "sequence":
        i = 0
        while i < len(rows):
            if _holds(pattern.first, rows[i][2]):
                j = next((j for j in range(i + 1, len(rows)) if rows[i][0] < rows[j][0] <= rows[i][0] + within
                          and _holds(pattern.then, rows[j][2])), None)
                if j is not None:
                    found.append(([rows[i], rows[j]], rows[j][0]))
                    i = j
            i += 1
    elif pattern.kind == "threshold":
        since: list[Any] = []
        for row in rows:
            if _holds(pattern.first, row[2]):
                since = [r for r in since if row[0] - r[0] <= within] + [row]
                if len(since) == pattern.count:
                    found.append((since, row[0]))
                    since = []
    else:
        for row, later in zip(rows, [*rows[1:], None], strict=True):
            if later is None or later[0] - row[0] >= within:
                found.append(([row], row[0] + within))
    return found
