"""The shared speed host's files and rules, without Spark: the wanted set and status files
(``speed.host_state``), the reconcile rules (``speed.host.reconcile``), the ``speed.host`` setting,
the definitions folder setting and scenario 10's generated pipelines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lakehouse.config import load_config
from lakehouse.config_model import TidewaterConfig
from lakehouse.errors import ConfigError


@pytest.fixture
def cfg(tmp_path: Path) -> TidewaterConfig:
    return load_config(env={"TIDEWATER_DATA_DIR": str(tmp_path / "data")})


def test_wanted_set_round_trips_and_a_new_start_gets_a_new_token(cfg: TidewaterConfig) -> None:
    from spark_jobs.speed import host_state

    first = host_state.want(cfg, "sensor_readings", 1)
    again = host_state.want(cfg, "sensor_readings", 2, "speed", "earliest")
    host_state.want(cfg, "lift_rides", 1)
    assert first.token != again.token
    got = host_state.wanted(cfg)
    assert sorted(got) == ["lift_rides", "sensor_readings"]
    assert got["sensor_readings"] == again and got["sensor_readings"].which == ["speed"]
    assert host_state.unwant(cfg, "lift_rides") is True and host_state.unwant(cfg, "lift_rides") is False
    assert sorted(host_state.wanted(cfg)) == ["sensor_readings"]
    host_state.forget_all(cfg)
    assert host_state.wanted(cfg) == {}


def test_a_status_counts_only_for_the_host_that_wrote_it(cfg: TidewaterConfig) -> None:
    from spark_jobs.speed import host_state

    w = host_state.want(cfg, "game_sessions", 1)
    host_state.write_status(cfg, w, "failed", "tidewater: the topic is missing")
    mine = host_state.read_status(cfg, "game_sessions", os.getpid())
    assert mine is not None and (mine["state"], mine["error"], mine["token"]) == ("failed", "tidewater: the topic is missing", w.token)
    assert host_state.read_status(cfg, "game_sessions", os.getpid() + 1) is None  # an earlier host's file
    assert host_state.read_status(cfg, "game_sessions", None) is None  # no host runs
    assert host_state.read_status(cfg, "sensor_readings", os.getpid()) is None
    with pytest.raises(ValueError, match="not one of"):
        host_state.write_status(cfg, w, "sleeping")


class FakeServed:
    """Stands in for a pipeline's thread: records starts and stops, ends when told to."""

    started: list[tuple[str, str]] = []

    def __init__(self, root: Any, cfg: TidewaterConfig, w: Any) -> None:
        self.w, self.running = w, True
        FakeServed.started.append((w.pipeline, w.token))

    def alive(self) -> bool:
        return self.running

    def stop(self) -> None:
        self.running = False


def test_reconcile_starts_stops_and_restarts_by_token_and_leaves_a_failed_one_alone(
        cfg: TidewaterConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_jobs.speed import host, host_state

    monkeypatch.setattr(host, "Served", FakeServed)
    FakeServed.started = []
    served: dict[str, Any] = {}
    a, b = host_state.want(cfg, "a", 1), host_state.want(cfg, "b", 1)
    host.reconcile(None, cfg, served)
    assert sorted(FakeServed.started) == sorted([("a", a.token), ("b", b.token)])
    served["b"].running = False  # b failed for good: its thread ended, its entry is still wanted
    host.reconcile(None, cfg, served)
    assert len(FakeServed.started) == 2, "a failed pipeline waits for a new start"
    again = host_state.want(cfg, "b", 1)  # 'speed start b': a new token
    host.reconcile(None, cfg, served)  # the ended thread leaves ...
    host.reconcile(None, cfg, served)  # ... and the new request starts
    assert FakeServed.started[-1] == ("b", again.token)
    host_state.unwant(cfg, "a")
    host.reconcile(None, cfg, served)
    assert "a" not in served and sorted(served) == ["b"]


def test_speed_host_setting_is_typed_and_a_bad_value_names_the_fix(tmp_path: Path) -> None:
    assert load_config(env={}).speed.host == "per_pipeline"
    assert load_config(env={"TIDEWATER_SPEED_HOST": "shared"}).speed.host == "shared"
    config = tmp_path / "tidewater.yml"
    config.write_text("speed:\n  host: one_jvm\n")
    with pytest.raises(ConfigError) as bad:
        load_config(config, env={})
    assert str(bad.value) == ("config error: 'speed.host' is 'one_jvm'; expected 'per_pipeline' (one Spark application "
                              "per pipeline) or 'shared' (one speed host for every pipeline)")


def test_a_folder_of_definitions_replaces_the_shipped_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.many_pipelines import copies, definitions, write_folder
    from lakehouse.pipeline import PIPELINES_DIR, PIPELINES_DIR_ENV, declared_pipelines, load_pipeline

    generated = definitions(4, "host")
    folder = write_folder(tmp_path / "pipelines", generated, PIPELINES_DIR)
    monkeypatch.setenv(PIPELINES_DIR_ENV, str(folder))
    assert set(declared_pipelines()) == {"game_sessions", "lift_rides", "sensor_readings", *generated}
    kinds = {name: load_pipeline(name).window.type for name in generated}
    assert kinds == {"host_t0": "tumbling", "host_s1": "sliding", "host_g2": "session", "host_t3": "tumbling"}
    assert [copies(load_pipeline(name)) for name in generated] == [1, 2, 1, 1]  # 10-minute windows every 5
    monkeypatch.setenv(PIPELINES_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="TIDEWATER_PIPELINES_DIR.*an existing folder"):
        declared_pipelines()


def test_the_hosts_pools_give_every_pipeline_the_default_pools_weight_above_the_background() -> None:
    import xml.etree.ElementTree as ET

    from spark_jobs.speed.host_pools import pools_xml

    pools = {p.get("name"): (p.findtext("schedulingMode"), int(p.findtext("weight") or 0), int(p.findtext("minShare") or 0))
             for p in ET.fromstring(pools_xml(["sensor_readings", "game_sessions"])).findall("pool")}
    assert pools == {"default": ("FIFO", 100, 64), "background": ("FIFO", 1, 0),
                     "sensor_readings": ("FIFO", 100, 0), "game_sessions": ("FIFO", 100, 0)}
