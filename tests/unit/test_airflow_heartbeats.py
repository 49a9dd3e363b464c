"""A restarted Airflow component counts as up only once it has heartbeated since its start: the report of
a component killed with SIGKILL stays "healthy" until its last heartbeat ages out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from infra.services.airflow import HEARTBEAT_FIELDS, heartbeat_after

pytestmark = pytest.mark.unit

START = datetime(2026, 11, 28, 16, 30, 0, tzinfo=UTC).timestamp()


def test_the_killed_components_last_heartbeat_does_not_count() -> None:
    old = {"status": "healthy", "latest_scheduler_heartbeat": "2026-11-28T16:29:55.123456+00:00"}
    assert not heartbeat_after(old, HEARTBEAT_FIELDS["scheduler"], START)


def test_a_heartbeat_after_the_start_counts_in_any_offset_and_without_one() -> None:
    field = HEARTBEAT_FIELDS["dag-processor"]
    assert field == "latest_dag_processor_heartbeat"
    assert heartbeat_after({field: "2026-11-28T16:30:02+00:00"}, field, START)
    assert heartbeat_after({field: "2026-11-28T17:30:02+01:00"}, field, START)
    assert heartbeat_after({field: "2026-11-28T16:30:02"}, field, START)  # naive: Airflow's are UTC
    assert not heartbeat_after({field: "2026-11-28T17:29:58+01:00"}, field, START)


def test_no_heartbeat_yet_is_not_up() -> None:
    assert not heartbeat_after({"status": "unhealthy", "latest_triggerer_heartbeat": None},
                               HEARTBEAT_FIELDS["triggerer"], START)
    assert not heartbeat_after({}, HEARTBEAT_FIELDS["triggerer"], START)
