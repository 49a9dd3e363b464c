"""What a batch run requires of the tables it writes beside: that they hold windows of its definition.

An incremental run adds windows to ``batch.<p>``: the table must have been computed under the current
definition (``lakehouse.definition``), or a full run must rebuild it first. A run of any mode publishes
its rows with their finality against the active speed table, which must have the same columns: when the
definition's aggregates or keys changed, the speed layer is rebuilt first (``tidewater replay``). A
window-only change may be recomputed by the batch layer first; ``serving.<p>`` then shows the speed
layer alone until both agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakehouse import contracts
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import active_version
from spark_jobs.shared import definition_guard

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SHAPE_ONLY = ("window.", "event_time:", "event_id:")  # changes that leave the tables' columns as they are


def require_one_definition(spark: SparkSession, cfg: TidewaterConfig, p: Pipeline, incremental: bool) -> None:
    """Refuse (one line naming the change and the command) a run the tables beside it cannot take."""
    if incremental:
        definition_guard.require_same(cfg, p.tables.batch, p,
                                f"recompute it with 'tidewater batch {p.name} --full'")
    speed = contracts.storage_table(p, active_version(cfg, p.name))
    columns = [c for c in definition_guard.mismatch(cfg, speed, p) if not c.startswith(SHAPE_ONLY)]
    if columns:
        raise TidewaterError(f"batch: the definition of {p.name} changed its columns since {speed} was computed "
                             f"({'; '.join(columns)}); rebuild the speed layer first with 'tidewater replay {p.name}', "
                             f"then 'tidewater batch {p.name} --full'")
