"""DagBag integrity: the five Tidewater DAGs import cleanly, fast, with tags, retries and an owner;
plus the speed supervisor's pure decision rule."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from airflow.dag_processing.dagbag import DagBag

pytestmark = pytest.mark.unit

DAGS = Path(__file__).resolve().parents[2] / "dags"
EXPECTED = {"tidewater_speed", "tidewater_batch", "tidewater_replay", "tidewater_quality", "tidewater_maintenance"}


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory: pytest.TempPathFactory) -> DagBag:
    os.environ.setdefault("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow_home")))
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    from airflow.dag_processing.dagbag import DagBag

    started = time.monotonic()
    bag = DagBag(str(DAGS))
    print(f"\nDagBag filled in {time.monotonic() - started:.3f}s")
    for stat in sorted(bag.dagbag_stats, key=lambda s: s.file):
        print(f"  parse {stat.file:<28} {stat.duration.total_seconds() * 1000:7.1f} ms  {stat.task_num} tasks")
    return bag


def test_no_import_errors_and_all_dags_present(dagbag: DagBag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) >= EXPECTED


def test_every_dag_has_tags_retries_and_owner(dagbag: DagBag) -> None:
    for dag_id in EXPECTED:
        dag = dagbag.dags[dag_id]
        assert "tidewater" in dag.tags, dag_id
        for t in dag.tasks:
            assert t.owner and t.owner != "airflow", (dag_id, t.task_id)
            assert t.retries is not None, (dag_id, t.task_id)
        if dag_id != "tidewater_replay":  # replay is a manual, long action: a human retries it
            assert all((t.retries or 0) >= 1 for t in dag.tasks), dag_id


def test_each_file_parses_quickly(dagbag: DagBag) -> None:
    slow = [(s.file, s.duration.total_seconds()) for s in dagbag.dagbag_stats if s.duration.total_seconds() > 2.0]
    assert not slow, f"DAG files doing heavy top-level work: {slow}"


def test_batch_dag_wires_write_audit_publish(dagbag: DagBag) -> None:
    dag = dagbag.dags["tidewater_batch"]
    publish = dag.get_task("sensor_readings.publish")
    assert {"sensor_readings.validate", "sensor_readings.stage"} <= publish.upstream_task_ids
    # publish moves the serving view too (one step): no separate refresh task
    assert [o.name for o in publish.outlets] == ["batch.sensor_readings", "serving.sensor_readings"]
    assert "sensor_readings.refresh_serving" not in dag.task_ids
    assert dag.get_task("sensor_readings.reconcile").upstream_task_ids == {"sensor_readings.publish"}
    assert dag.catchup is False
    replay = dagbag.dags["tidewater_replay"]
    assert type(replay.timetable).__name__ == "NullTimetable"  # manual only
    assert set(replay.params.keys()) == {"pipeline", "rollback"}


def test_speed_decision_rule() -> None:
    import sys

    sys.path.insert(0, str(DAGS.parent))
    from dags.tidewater_common import last_json, speed_decision

    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert speed_decision({"running": False}, 5, now)[0] == "start"
    fresh = {"running": True, "pid": 1, "lag": {"0": 10}, "last_batch_time": now - timedelta(seconds=20)}
    assert speed_decision(fresh, 5, now)[0] == "none"
    stalled = {**fresh, "last_batch_time": (now - timedelta(minutes=10)).isoformat()}
    assert speed_decision(stalled, 5, now)[0] == "restart"
    idle = {**stalled, "lag": {"0": 0}}  # no data waiting: an old batch is not a stall
    assert speed_decision(idle, 5, now)[0] == "none"
    # restarted after a crash: the last batch is as old as the crash, but the new job gets its own
    # grace period (warm-up, the re-run micro-batch, a backlog), and is a stall only after it
    restarted = {**stalled, "started_at": (now - timedelta(seconds=40)).isoformat()}
    assert speed_decision(restarted, 5, now)[0] == "none"
    assert speed_decision({**restarted, "started_at": (now - timedelta(minutes=4)).isoformat()}, 5, now)[0] == "restart"
    assert last_json('… staging\n{"run_id": "r1", "windows": 3}\n') == {"run_id": "r1", "windows": 3}


def test_schedule_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    sys.path.insert(0, str(DAGS.parent))
    from dags.tidewater_common import schedule_knob

    monkeypatch.delenv("TIDEWATER_AIRFLOW_QUALITY_SCHEDULE", raising=False)
    assert schedule_knob("quality", "30 * * * *") == "30 * * * *"
    monkeypatch.setenv("TIDEWATER_AIRFLOW_QUALITY_SCHEDULE", " @daily ")
    assert schedule_knob("quality", "30 * * * *") == "@daily"
    for manual in ("none", "None", ""):
        monkeypatch.setenv("TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE", manual)
        assert schedule_knob("maintenance", "@daily") is None


def test_quality_runs_on_the_batch_assets_and_active_dags(dagbag: DagBag) -> None:
    """Data-aware: tidewater_quality is scheduled by any batch publish (lambda mode, no override); the
    supervisor, batch and quality DAGs are created active by default (``airflow.active_dags``)."""
    quality = dagbag.dags["tidewater_quality"]
    if os.environ.get("TIDEWATER_AIRFLOW_QUALITY_SCHEDULE") is None:
        assert type(quality.timetable).__name__ == "AssetTriggeredTimetable"
        condition: Any = quality.timetable.asset_condition  # AssetAny of the batch Assets
        names = {a.name for a in condition.objects}
        assert names == {f"batch.{p.stem}" for p in (DAGS.parent / "lakehouse" / "pipelines").glob("*.yml")}
    if os.environ.get("TIDEWATER_AIRFLOW_ACTIVE_DAGS") is None:
        paused = {d: dagbag.dags[d].is_paused_upon_creation for d in EXPECTED}
        assert paused == {"tidewater_speed": False, "tidewater_batch": False, "tidewater_quality": False,
                          "tidewater_replay": False, "tidewater_maintenance": True}


def test_the_cli_records_the_assets_the_publish_task_updates(dagbag: DagBag) -> None:
    """Plain ``tidewater batch`` records Asset events for the URIs that the DAG's publish task has as
    outlets (one owner: ``naming.asset_uri``); the lookup keeps exact URIs, not ``uri_pattern``'s substrings."""
    from infra.services.airflow_assets import LAYERS, asset_ids
    from lakehouse import naming

    publish = dagbag.dags["tidewater_batch"].get_task("sensor_readings.publish")
    assert {a.uri for a in publish.outlets} == {naming.asset_uri(layer, "sensor_readings") for layer in LAYERS}
    listed = [{"id": 1, "uri": "tidewater://batch/sensor_readings"}, {"id": 2, "uri": "tidewater://batch/sensor_readings_eu"},
              {"id": 3, "uri": "tidewater://serving/sensor_readings"}]
    wanted = [naming.asset_uri(layer, "sensor_readings") for layer in LAYERS]
    assert asset_ids(listed, wanted) == {"tidewater://batch/sensor_readings": 1, "tidewater://serving/sensor_readings": 3}


def test_active_dags_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    sys.path.insert(0, str(DAGS.parent))
    from dags.tidewater_common import paused_at_creation

    monkeypatch.delenv("TIDEWATER_AIRFLOW_ACTIVE_DAGS", raising=False)
    assert not paused_at_creation("speed") and paused_at_creation("maintenance")
    monkeypatch.setenv("TIDEWATER_AIRFLOW_ACTIVE_DAGS", "")
    assert paused_at_creation("speed") and paused_at_creation("batch")


def test_pipelines_knob_limits_the_dags_tasks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``$TIDEWATER_PIPELINES`` (one owner: ``available_pipelines``) limits the tasks the DAGs make."""
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("TIDEWATER_PIPELINES", "sensor_readings")
    bag = DagBag(str(DAGS))
    assert not bag.import_errors, bag.import_errors
    batch_tasks = {t.task_id.split(".")[0] for t in bag.dags["tidewater_batch"].tasks if "." in t.task_id}
    speed_tasks = {t.task_id for t in bag.dags["tidewater_speed"].tasks}
    assert batch_tasks == {"sensor_readings"}, batch_tasks
    assert speed_tasks == {"supervise_sensor_readings"}, speed_tasks
