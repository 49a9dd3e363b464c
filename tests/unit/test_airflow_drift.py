"""What ``tidewater up`` compares before it restarts a running Airflow: the settings its processes got at
their start against the ones a start now would pass (``infra.services.airflow_drift``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.services import airflow_drift
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
    monkeypatch.setenv("TIDEWATER_MODE", "kappa")
    monkeypatch.setenv("TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE", "@weekly")
    assert airflow_drift.changes(load_config()) == ["$TIDEWATER_AIRFLOW_MAINTENANCE_SCHEDULE: (unset) -> @weekly",
                                                    f'mode: "{cfg.mode}" -> "kappa"']
