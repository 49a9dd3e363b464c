"""The supervisor's decision for a running job whose last micro-batch is old: a job whose Spark work
still advances (a long catch-up batch after a crash) is left alone; one whose work stopped is restarted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dags.tidewater_common import speed_decision

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 26, 1, 36, tzinfo=UTC)


def status(started_s_ago: float, last_batch_s_ago: float, advanced_s_ago: float | None) -> dict[str, object]:
    return {"running": True, "pid": 1, "lag": {"0": 357_870},
            "started_at": (NOW - timedelta(seconds=started_s_ago)).isoformat(),
            "last_batch_time": (NOW - timedelta(seconds=last_batch_s_ago)).isoformat(),
            "advanced_at": None if advanced_s_ago is None else (NOW - timedelta(seconds=advanced_s_ago)).isoformat()}


def test_a_long_batch_whose_tasks_advance_is_not_a_stall() -> None:
    did, why = speed_decision(status(190, 240, 4), 1, now=NOW)
    assert did == "none" and "advanced 4s ago" in why


def test_a_job_whose_work_stopped_is_restarted() -> None:
    assert speed_decision(status(600, 600, 400), 1, now=NOW)[0] == "restart"


def test_a_job_without_the_file_is_judged_by_its_batches_as_before() -> None:
    assert speed_decision(status(600, 600, None), 1, now=NOW)[0] == "restart"
    assert speed_decision(status(600, 20, None), 1, now=NOW)[0] == "none"


def test_a_job_just_started_gets_its_grace_period() -> None:
    assert speed_decision(status(100, 600, None), 1, now=NOW)[0] == "none"
