"""``ops.batch_runs`` is a log of status changes: a run's status is its row of highest rank (pure)."""

from __future__ import annotations

from datetime import datetime

import pytest

from spark_jobs.io.batch_runs import current_runs

pytestmark = pytest.mark.unit
T = datetime(2026, 1, 1)


def row(run: str, status: str, minute: int) -> dict:
    return {"run_id": run, "status": status, "staged_at": T.replace(minute=minute)}


def test_a_runs_later_status_wins_in_any_row_order() -> None:
    log = [row("b", "staged", 2), row("a", "published", 1), row("c", "staged", 3), row("a", "staged", 1),
           row("b", "superseded", 2), row("c", "failed", 3)]
    for rows in (log, list(reversed(log))):
        assert [(r["run_id"], r["status"]) for r in current_runs(rows)] == [
            ("a", "published"), ("b", "superseded"), ("c", "failed")]


def test_a_run_with_one_row_keeps_it() -> None:
    """Rows written before the log (one row per run, updated in place) read the same."""
    assert current_runs([row("x", "published", 5), row("y", "staged", 6)]) == [
        row("x", "published", 5), row("y", "staged", 6)]
