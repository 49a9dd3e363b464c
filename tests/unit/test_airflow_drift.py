"""What ``tidewater up`` compares before it restarts a running Airflow: the settings its processes got at
their start against the ones a start now would pass (``infra.services.airflow_drift``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.services import airflow_drift
from infra.utc import HOST_ZONE_ENV
from lakehouse import settings_diff

pytestmark = pytest.mark.unit


def test_nested_settings_are_dotted_keys_with_their_values() -> None:
    flat = settings_diff.flatten({"mode": "kappa", "airflow": {"port": 8080, "batch_schedule": "@hourly"}})
    assert flat == {"mode": '"kappa"', "airflow.port": "8080", "airflow.batch_schedule": '"@hourly"'}


def test_each_changed_added_or_removed_setting_is_named_with_both_values() -> None:
    before = {"mode": '"lambda"', "airflow.port": "8080", "$TIDEWATER_PIPELINES": "a"}
    after = {"mode": '"kappa"', "airflow.port": "8080", "$TIDEWATER_AIRFLOW_BATCH_SCHEDULE": "none"}
    assert settings_diff.differences(before, after) == [
        "$TIDEWATER_AIRFLOW_BATCH_SCHEDULE: (unset) -> none", "$TIDEWATER_PIPELINES: a -> (unset)",
        'mode: "lambda" -> "kappa"']
    assert settings_diff.differences(after, dict(after)) == []


def test_a_recorded_start_matches_until_the_mode_or_a_schedule_changes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from lakehouse.config import load_config

    monkeypatch.setenv("TIDEWATER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TIDEWATER_MODE", raising=False)
    monkeypatch.delenv("TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE", raising=False)
    (tmp_path / "run").mkdir()
    cfg = load_config()
    assert airflow_drift.changes(cfg) == [airflow_drift.NOT_RECORDED]
    airflow_drift.record(cfg)
    assert airflow_drift.changes(cfg) == []
    assert "jwt" not in airflow_drift.settings_file(cfg).read_text().lower()
    # a process that started Spark keeps its host's zone for reports: not a setting (CI once restarted
    # Airflow on "$TIDEWATER_HOST_TZ: (unset) -> " after the test process's first Spark session)
    monkeypatch.setenv(HOST_ZONE_ENV, "Pacific/Chatham")
    assert airflow_drift.changes(cfg) == []
    monkeypatch.setenv("TIDEWATER_MODE", "kappa")
    monkeypatch.setenv("TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE", "@weekly")
    assert airflow_drift.changes(load_config()) == ["$TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE: (unset) -> @weekly",
                                                    f"$TIDEWATER_MODE: {cfg.mode} -> kappa"]


def test_a_key_tasks_read_from_the_config_file_needs_no_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each task's ``tidewater`` command reads ``TIDEWATER_CONFIG`` when it runs: a Spark setting edited there
    reaches it without restarting Airflow (which would stop the running tasks); ``mode`` is frozen into
    Airflow's environment, and the DAG files read it there, so it does."""
    from lakehouse.config import load_config

    config = tmp_path / "tidewater.yml"
    config.write_text("spark: {driver_memory: 2g}\n")
    monkeypatch.setenv("TIDEWATER_CONFIG", str(config))
    monkeypatch.setenv("TIDEWATER_DATA_DIR", str(tmp_path / "data"))
    for var in ("TIDEWATER_MODE", "TIDEWATER_SPARK_DRIVER_MEMORY"):
        monkeypatch.delenv(var, raising=False)
    airflow_drift.settings_file(load_config()).parent.mkdir(parents=True)
    airflow_drift.record(load_config())
    config.write_text("spark: {driver_memory: 3g}\n")
    assert load_config().spark.driver_memory == "3g" and airflow_drift.changes(load_config()) == []
    config.write_text("mode: kappa\nspark: {driver_memory: 3g}\n")
    assert airflow_drift.changes(load_config()) == ["$TIDEWATER_MODE: lambda -> kappa"]
    recorded = airflow_drift.settings_file(load_config()).read_text()
    assert "PATH\"" not in recorded.replace("PYTHONPATH", "") and "FERNET" not in recorded and "JWT" not in recorded


def test_settings_recorded_by_an_older_tidewater_count_as_not_recorded(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from lakehouse.config import load_config

    monkeypatch.setenv("TIDEWATER_DATA_DIR", str(tmp_path))
    (tmp_path / "run").mkdir()
    airflow_drift.settings_file(load_config()).write_text('{"mode": "\\"lambda\\""}')
    assert airflow_drift.changes(load_config()) == [airflow_drift.NOT_RECORDED]
