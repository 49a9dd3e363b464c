"""The ``tidewater whatif`` model for tumbling windows in plain Python: the oracle of the integration test.

``rows``: bronze as (event id, key, event ms, arrival ms, micro-batch ms, partition, offset). The same
rules as ``spark_jobs.transforms.watermark_whatif`` (its docstring), written as loops.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

Row = tuple[str, str, int, int, int, int, int]


def behind(event_ms: int, watermark_ms: int | None) -> bool:
    """The stateless speed layer's rule: before the micro-batch's watermark (none in the first micro-batch)."""
    return watermark_ms is not None and event_ms < watermark_ms


def tumbling(rows: list[Row], delay_s: int, size_ms: int, skew_s: int) -> dict[str, Any]:
    d, skew = delay_s * 1000, min(skew_s, delay_s) * 1000
    valid = [r for r in rows if r[2] <= r[3] + skew]  # not FUTURE_TIMESTAMP at this delay
    top: dict[int, int] = {}
    for r in valid:
        top[r[4]] = max(top.get(r[4], r[2]), r[2])
    before: dict[int, int | None] = {}
    after: dict[int, int] = {}
    seen: int | None = None
    for b in sorted(top):
        before[b] = None if seen is None else seen - d
        seen = top[b] if seen is None else max(seen, top[b])
        after[b] = seen - d
    first: dict[str, Row] = {}
    for r in sorted(rows, key=lambda r: (r[3], r[5], r[6])):
        first.setdefault(r[0], r)
    quarantined = [r for r in first.values() if r[2] > r[3] + skew]
    dropped = [r for r in first.values() if r not in quarantined and behind(r[2], before[r[4]])]
    exact = Counter((r[1], r[2] // size_ms * size_ms) for r in first.values())
    speed = Counter((r[1], r[2] // size_ms * size_ms) for r in first.values() if r not in dropped and r not in quarantined)
    finality = []
    for (_, start) in exact:
        final = next((b for b in sorted(after) if after[b] >= start + size_ms), None)
        if final is not None:
            finality.append((final - start - size_ms) / 1000)
    return {"delay_seconds": delay_s, "events": len(first), "dropped_events": len(dropped),
            "quarantined_events": len(quarantined), "windows": len(exact),
            "wrong_windows": sum(1 for w, n in exact.items() if speed.get(w) != n),
            "final_windows": len(finality),
            "finality_p50_seconds": float(np.percentile(finality, 50)) if finality else None,
            "finality_p95_seconds": float(np.percentile(finality, 95)) if finality else None,
            "finality_max_seconds": max(finality) if finality else None}
