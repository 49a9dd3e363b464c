"""``BatchRun``: one batch run at one status, the typed form of an ``ops.batch_runs`` row (``contracts.BATCH_RUNS``).

Frozen: a run moves staged -> validated -> published (or failed, or superseded) by new records
(``dataclasses.replace``, ``with_verdict``), each appended as a row of its own (``spark_jobs.io.batch_runs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lakehouse.contracts import BATCH_RUNS
from lakehouse.errors import TidewaterError

GATE_PASSED, GATE_FAILED = "passed", "failed"


@dataclass(frozen=True)
class BatchRun:
    """The columns of ``ops.batch_runs``, in its order (a test holds them equal), and ``already_published``:
    not a column, set on the answer of a publish of a run that was published before (nothing written)."""

    run_id: str
    pipeline: str
    mode: str  # 'full' or 'incremental'
    status: str  # ``batch_runs.STATUS_RANK``
    bronze_version: int
    previous_bronze_version: int | None
    cutoff: datetime
    windows_written: int
    windows_deleted: int
    events_read: int
    duration_ms: int
    staged_at: datetime
    published_at: datetime | None = None
    message: str | None = None
    staging_version: int | None = None  # the version of batch.<p>__staging the run wrote
    gate: str | None = None  # the quality gate's verdict on it: GATE_PASSED or GATE_FAILED
    gated_version: int | None = None  # the staging version that verdict is on
    already_published: bool = dataclasses.field(default=False, compare=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BatchRun:
        """The run of an ``ops.batch_runs`` row (a column it lacks, from an older table, reads as None)."""
        values: dict[str, Any] = {c: row.get(c) for c in BATCH_RUNS.column_names}
        return cls(**values)

    def row(self) -> tuple[Any, ...]:
        """The values of the row, in the contract's column order."""
        return tuple(getattr(self, c) for c in BATCH_RUNS.column_names)

    def with_verdict(self, passed: bool, version: int, message: str = "") -> BatchRun:
        """This run with the quality gate's verdict on version ``version`` of its staging table, as recorded
        (``validated``, or ``failed`` with ``message``): one form, whoever ran the gate."""
        if passed:
            return dataclasses.replace(self, status="validated", gate=GATE_PASSED, gated_version=version)
        return dataclasses.replace(self, status="failed", gate=GATE_FAILED, gated_version=version,
                                   message=message[:1000])

    def written_version(self) -> int:
        """The version of ``batch.<p>__staging`` this run wrote: its rows, exactly; fails closed without one."""
        if self.staging_version is None:
            raise TidewaterError(f"batch: run {self.run_id} of {self.pipeline} recorded no staging version, so its "
                                 f"rows cannot be told apart; stage a new run with 'tidewater batch {self.pipeline} "
                                 "--stage-only'")
        return int(self.staging_version)

    def as_read(self) -> BatchRun:
        """This run as ``batch_runs.runs`` reads it back: instants as naive datetimes in this process's zone
        (what ``collect()`` returns), so a caller that kept the run it saved needs no read."""
        return dataclasses.replace(self, **{f.name: getattr(self, f.name).astimezone().replace(tzinfo=None)
                                            for f in dataclasses.fields(self)
                                            if isinstance(getattr(self, f.name), datetime)})
