"""Bad definitions and settings stop with one line naming the problem and the fix (exit 2), never a
traceback (issue 11, defect 11). Pure validations here; three cases through the real CLI."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.services.ports import free_port
from lakehouse.config import load_config
from lakehouse.errors import ConfigError, PipelineDefinitionError, TidewaterError
from lakehouse.pipeline import PIPELINES_DIR, load_pipeline, parse_pipeline

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _raw(name: str = "sensor_readings") -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((PIPELINES_DIR / f"{name}.yml").read_text()))


@pytest.mark.parametrize(
    ("base", "window", "field"),
    [
        ("lift_rides", {"type": "sliding", "size": "10 minutes", "slide": "0 minutes"}, "window.slide"),
        ("lift_rides", {"type": "sliding", "size": "0 minutes", "slide": "5 minutes"}, "window.size"),
        ("sensor_readings", {"type": "tumbling", "size": "0 seconds"}, "window.size"),
        ("game_sessions", {"type": "session", "gap": "0 minutes"}, "window.gap"),
    ],
)
def test_zero_length_windows_are_refused(base: str, window: dict[str, str], field: str) -> None:
    raw = _raw(base)
    raw["window"] = window
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(raw)
    assert f"field '{field}'" in str(err.value) and "longer than 0" in str(err.value), err.value


def test_allowed_lateness_shorter_than_the_watermark_is_refused() -> None:
    raw = _raw()  # watermark 2 minutes
    raw["allowed_lateness"] = "1 minute"
    with pytest.raises(PipelineDefinitionError, match="field 'allowed_lateness' is '1 minute', shorter than the watermark"):
        parse_pipeline(raw)
    raw["allowed_lateness"] = "2 minutes"
    assert parse_pipeline(raw).lateness_seconds == 120
    with pytest.raises(PipelineDefinitionError, match="shorter than the watermark '10 minutes'"):
        load_pipeline("sensor_readings", {"sensor_readings": {"watermark": "10 minutes", "allowed_lateness": "5 minutes"}})


@pytest.mark.parametrize("name", ["../pipelines/sensor_readings", "sensor_readings/..", "a/b", "..", ""])
def test_pipeline_names_with_paths_are_refused(name: str) -> None:
    with pytest.raises(PipelineDefinitionError) as err:
        load_pipeline(name)
    assert "lower_snake_case" in str(err.value) and "known pipelines: game_sessions" in str(err.value)


@pytest.mark.parametrize("value", ["5", "[watermark]", "'2 minutes'"])
def test_pipeline_overrides_must_be_mappings(tmp_path: Path, value: str) -> None:
    path = tmp_path / "tidewater.yml"
    path.write_text(f"pipelines: {{sensor_readings: {value}}}\n")
    with pytest.raises(ConfigError, match="'pipelines.sensor_readings' is .*; expected a mapping of overrides"):
        load_config(path, env={})
    with pytest.raises(PipelineDefinitionError, match="expected a mapping"):
        load_pipeline("sensor_readings", {"sensor_readings": yaml.safe_load(value)})


def test_unknown_service_names_list_the_valid_ones() -> None:
    from tidewater.commands.stack import select_services

    with pytest.raises(TidewaterError, match="unknown service 'thrift'; valid names: postgres, metastore, kafka_broker, "
                                             "thrift_server, job_service, airflow"):
        select_services(["kafka_broker", "thrift"])
    assert [s.__name__ for s in select_services(["thrift_server"])] == ["infra.services.thrift_server"]
    assert [s.__name__.split(".")[-1] for s in select_services(None)] == [
        "postgres", "metastore", "kafka_broker", "thrift_server", "job_service", "airflow", "superset"]  # postgres and superset: only when enabled


def _cli(tmp_path: Path, *args: str, config: str = "{}\n", path_env: str | None = None) -> list[str]:
    """Run the CLI on an isolated data folder and free ports; its stderr lines (exit code must be 2)."""
    cfg = tmp_path / "tidewater.yml"
    cfg.write_text(config)
    env = {**os.environ, "TIDEWATER_CONFIG": str(cfg), "TIDEWATER_DATA_DIR": str(tmp_path / "data"),
           "TIDEWATER_AIRFLOW_DISABLED": "1", **{f"TIDEWATER_{k}_PORT": str(free_port())
                                                for k in ("KAFKA", "KAFKA_CONTROLLER", "METASTORE", "THRIFT", "AIRFLOW")}}
    if path_env is not None:
        env["PATH"] = path_env
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidewater: "), out.stderr
    return lines


def test_cli_up_with_an_unknown_service(tmp_path: Path) -> None:
    line = _cli(tmp_path, "up", "--only", "thrift")[0]
    assert "unknown service 'thrift'" in line and "thrift_server" in line, line


def test_cli_override_that_is_not_a_mapping(tmp_path: Path) -> None:
    line = _cli(tmp_path, "produce", "sensor_readings", "--count", "0", config="pipelines: {sensor_readings: 5}\n")[0]
    assert "'pipelines.sensor_readings' is 5" in line, line


def test_cli_up_without_java(tmp_path: Path) -> None:
    line = _cli(tmp_path, "up", "--only", "metastore", path_env=str(Path(sys.executable).parent))[0]
    assert "java was not found on PATH" in line and "install" in line, line
