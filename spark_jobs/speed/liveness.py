"""When a speed job's Spark work last advanced: ``run/speed-<p>-v<N>.alive`` (an ISO UTC time).

A micro-batch catching up on a large backlog on a busy machine can run for minutes without a commit,
and a job restarted after a crash can spend minutes starting. The supervisor
(``dags/tidewater_common.speed_decision``) must not take either for a stall: restarting such a job
stops it inside its micro-batch, the next start re-runs that batch, and the chaos soak saw the
supervisor restart a recovering job again and again while the backlog grew (357,870 events). The
job writes the file at start and whenever its active Spark stages or their completed tasks changed
since the last look (every ``LOOK_EVERY_S``); a job whose queries hang leaves it unchanged and is
restarted as before.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig

LOOK_EVERY_S = 5.0


def liveness_file(cfg: TidewaterConfig, pipeline: str, version: int) -> Path:
    return naming.run_dir(cfg) / f"speed-{pipeline}-v{version}.alive"


def last_advanced(cfg: TidewaterConfig, pipeline: str, version: int) -> str | None:
    """The time the job's Spark work last advanced, or None (no file: a job from before it existed)."""
    try:
        return liveness_file(cfg, pipeline, version).read_text().strip() or None
    except OSError:
        return None


def stage_signature(spark: Any) -> tuple[tuple[int, int], ...]:
    """(stage id, completed tasks) of every active stage: it changes while any Spark work advances."""
    tracker = spark.sparkContext.statusTracker()
    found = []
    for stage_id in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            found.append((int(stage_id), int(info.numCompletedTasks)))
    return tuple(found)


class Liveness:
    """``beat()`` from the job's supervise loop; writes the file when the signature moved."""

    def __init__(self, spark: Any, path: Path) -> None:
        self.spark, self.path = spark, path
        self.signature: tuple[tuple[int, int], ...] = ()
        self.looked = 0.0
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".alive.tmp")
        tmp.write_text(datetime.now(UTC).isoformat(timespec="seconds"))
        os.replace(tmp, self.path)  # readers see the old time or the new one, never a torn file

    def beat(self) -> None:
        if time.monotonic() - self.looked < LOOK_EVERY_S:
            return
        self.looked = time.monotonic()
        signature = stage_signature(self.spark)
        if signature and signature != self.signature:
            self.write()
        self.signature = signature
