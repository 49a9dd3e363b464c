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


def test_a_run_record_has_the_tables_columns_in_order_and_records_a_verdict_on_its_own_rows() -> None:
    """``BatchRun`` is the typed row of ``ops.batch_runs``; a verdict names the staging version it judged."""
    import dataclasses

    from lakehouse.contracts import BATCH_RUNS
    from lakehouse.errors import TidewaterError
    from lakehouse.run_records import BatchRun

    assert [f.name for f in dataclasses.fields(BatchRun) if f.name != "already_published"] == BATCH_RUNS.column_names
    staged = BatchRun.from_row({"run_id": "r", "pipeline": "p", "mode": "full", "status": "staged", "staging_version": 4})
    assert len(staged.row()) == len(BATCH_RUNS.column_names) and staged.row()[0] == "r"
    passed, failed = staged.with_verdict(True, 4), staged.with_verdict(False, 4, "x" * 2000)
    assert (passed.status, passed.gate, passed.gated_version, passed.message) == ("validated", "passed", 4, None)
    assert (failed.status, failed.gate, failed.gated_version, len(failed.message or "")) == ("failed", "failed", 4, 1000)
    assert staged.written_version() == 4 and staged.status == "staged"  # frozen: the verdicts are new records
    with pytest.raises(TidewaterError, match="recorded no staging version"):
        dataclasses.replace(staged, staging_version=None).written_version()
