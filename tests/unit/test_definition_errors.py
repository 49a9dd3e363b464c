"""Bad definitions and settings stop with one line naming the problem and the fix (exit 2), never a
traceback. Pure validations here; a few cases through the real CLI."""

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


def _declare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stem: str, text: str) -> Path:
    """A pipelines folder holding one definition file, ``<stem>.yml``; its path."""
    monkeypatch.setattr("lakehouse.pipeline.PIPELINES_DIR", tmp_path)
    path = tmp_path / f"{stem}.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("mutate", "field", "hint"),
    [
        (lambda r: r.update(alowed_lateness="5 minutes"), "alowed_lateness", "did you mean 'allowed_lateness'?"),
        (lambda r: r.update(watermak=r.pop("watermark")), "watermak", "did you mean 'watermark'?"),
        (lambda r: r.update(colour="blue"), "colour", "remove it or use one of: name, owner, description, topic"),
        (lambda r: r["window"].update(sise="1 minute"), "window.sise", "did you mean 'size'?"),
        (lambda r: r["window"].update(allowed_lateness="1 minute"), "window.allowed_lateness",
         "remove it or use one of: type, size, slide, gap"),
        (lambda r: r["aggregates"].append({"name": "x", "fn": "max", "colum": "temperature"}), "aggregates[4].colum",
         "did you mean 'column'?"),
        (lambda r: r["quality"].update(max_quarantine_rat=0.1), "quality.max_quarantine_rat",
         "did you mean 'max_quarantine_rate'?"),
        (lambda r: r.update(quality={"range": {"temperature": [-90, 70]}}), "quality.range", "did you mean 'ranges'?"),
        (lambda r: r.update(quality={"ranges": {"temprature": [-90, 70]}}), "quality.ranges.temprature",
         "did you mean 'temperature'?"),
    ],
)
def test_unknown_keys_are_refused_with_the_closest_known_one(mutate: Any, field: str, hint: str) -> None:
    raw = _raw()
    mutate(raw)
    with pytest.raises(PipelineDefinitionError) as err:
        parse_pipeline(raw)
    assert f"field '{field}' is not a known key" in str(err.value) and hint in str(err.value), err.value


def test_an_unknown_key_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (PIPELINES_DIR / "sensor_readings.yml").read_text() + "alowed_lateness: 5 minutes\n"
    path = _declare(tmp_path, monkeypatch, "sensor_readings", text)
    with pytest.raises(PipelineDefinitionError) as err:
        load_pipeline("sensor_readings")
    assert str(err.value).startswith(f"pipeline 'sensor_readings' ({path}): field 'alowed_lateness' is not a known "
                                     "key; did you mean 'allowed_lateness'?"), err.value


def test_the_name_must_be_the_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _declare(tmp_path, monkeypatch, "sensors", (PIPELINES_DIR / "sensor_readings.yml").read_text())
    with pytest.raises(PipelineDefinitionError) as err:
        load_pipeline("sensors")
    assert str(err.value) == (f"pipeline 'sensors' ({path}): field 'name' is 'sensor_readings', not the file's name; "
                              "set name: sensors, or rename the file to sensor_readings.yml")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("name: sensor_readings\nschema: {event_id: string\n", "line 3, column 1: expected ',' or '}'"),
        ("name: sensor_readings\nwindow: tumbling: 1 minute\n", "line 2, column 17: mapping values are not allowed here"),
    ],
)
def test_a_malformed_pipeline_file_names_file_line_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              text: str, where: str) -> None:
    path = _declare(tmp_path, monkeypatch, "sensor_readings", text)
    with pytest.raises(TidewaterError) as err:
        load_pipeline("sensor_readings")
    message = str(err.value)
    assert message.startswith(f"{path} is not valid YAML at {where}"), message
    assert "fix the YAML syntax there" in message and "\n" not in message, message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("mode: [\n", "line 2, column 1: expected the node content, but found '<stream end>'"),
        ("kafka:\n  port: 1\n bad: 2\n", "line 3, column 2: expected <block end>, but found '<block mapping start>'"),
        ("mode: lambda: kappa\n", "line 1, column 13: mapping values are not allowed here"),
    ],
)
def test_a_malformed_config_file_names_file_line_and_column(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "tidewater.yml"
    path.write_text(text)
    with pytest.raises(TidewaterError) as err:
        load_config(path, env={})
    message = str(err.value)
    assert message.startswith(f"{path} is not valid YAML at {where}"), message
    assert "fix the YAML syntax there" in message and "\n" not in message, message


def test_cli_prints_malformed_yaml_as_one_line(tmp_path: Path) -> None:
    path = tmp_path / "tidewater.yml"
    path.write_text("kafka: {port: 9092\n")
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "--config", str(path), "config", "show"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tidewater: {path} is not valid YAML at line 2, column 1"), out.stderr


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
