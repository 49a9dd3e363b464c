"""Config loading: defaults, file, environment overrides and the documented error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse.config import load_config
from lakehouse.errors import ConfigError

pytestmark = pytest.mark.unit


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tidewater.yml"
    path.write_text(text)
    return path


def test_defaults_bind_loopback_and_use_lambda(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "{}"), env={})
    assert cfg.mode == "lambda"
    assert cfg.kafka.bootstrap == "127.0.0.1:9092"
    assert cfg.kafka.partitions == 4
    assert cfg.spark.master == "local[*]"
    assert cfg.data_dir == tmp_path / ".tidewater"


def test_environment_overrides_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "mode: lambda\nkafka: {port: 9100}\n")
    cfg = load_config(path, env={"TIDEWATER_MODE": "kappa", "TIDEWATER_SPARK_MASTER": "spark://127.0.0.1:7077",
                                 "TIDEWATER_DATA_DIR": str(tmp_path / "d"), "TIDEWATER_KAFKA_BOOTSTRAP": "h:1"})
    assert cfg.mode == "kappa"
    assert cfg.spark.master == "spark://127.0.0.1:7077"
    assert cfg.data_dir == tmp_path / "d"
    assert cfg.kafka.bootstrap == "h:1"
    assert cfg.kafka.port == 9100


def test_brokers_give_ports_bootstrap_list_and_replication(tmp_path: Path) -> None:
    one = load_config(_write(tmp_path, "{}"), env={})
    assert (one.kafka.brokers, one.kafka.node_ports(), one.kafka.replication_factor, one.kafka.min_insync_replicas) == (
        1, [(1, 9092, 9093)], 1, 1)
    three = load_config(_write(tmp_path, "kafka: {brokers: 2}\n"), env={"TIDEWATER_KAFKA_BROKERS": "3"})
    assert three.kafka.node_ports() == [(1, 9092, 9093), (2, 9094, 9095), (3, 9096, 9097)]
    assert three.kafka.bootstrap == "127.0.0.1:9092,127.0.0.1:9094,127.0.0.1:9096"
    assert (three.kafka.replication_factor, three.kafka.min_insync_replicas) == (3, 2)
    five = load_config(_write(tmp_path, "kafka: {brokers: 5}\n"), env={"TIDEWATER_KAFKA_BOOTSTRAP": "a:1,b:2"})
    assert five.kafka.bootstrap == "a:1,b:2" and five.kafka.replication_factor == 3


def test_cluster_node_properties(tmp_path: Path) -> None:
    from infra.services.kafka_nodes import nodes, server_properties

    cfg = load_config(_write(tmp_path, "kafka: {brokers: 4, port: 9100, controller_port: 9101}\n"), env={})
    four = nodes(cfg)
    assert [(n.name, n.voter, n.home.name) for n in four] == [
        ("kafka-1", True, "broker-1"), ("kafka-2", True, "broker-2"), ("kafka-3", True, "broker-3"),
        ("kafka-4", False, "broker-4")]
    props = dict(line.split("=", 1) for line in server_properties(cfg, four[3]).splitlines() if line)
    assert props["process.roles"] == "broker" and props["node.id"] == "4"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9101,2@127.0.0.1:9103,3@127.0.0.1:9105"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9106"
    assert (props["default.replication.factor"], props["offsets.topic.replication.factor"],
            props["transaction.state.log.replication.factor"], props["min.insync.replicas"],
            props["transaction.state.log.min.isr"], props["unclean.leader.election.enable"]) == ("3", "3", "3", "2", "2", "false")
    single = load_config(_write(tmp_path, "{}"), env={})
    assert nodes(single)[0].home == single.data_dir / "kafka" and nodes(single)[0].name == "kafka"


def test_jvm_options_reach_every_jvm_flag_list(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "jvm_options: -Xss4m\n"),
                      env={"TIDEWATER_JVM_OPTIONS": "-XX:TieredStopAtLevel=1 '-Dx=a b'"})
    assert cfg.jvm_flags == ["-XX:TieredStopAtLevel=1", "-Dx=a b", "-XX:ReservedCodeCacheSize=240m"]
    assert load_config(_write(tmp_path, "{}"), env={}).jvm_flags == []


def test_a_collector_chosen_in_jvm_options_replaces_the_brokers_own(tmp_path: Path) -> None:
    """Kafka's JVM picks G1 itself; a JVM given two collectors refuses to start."""
    from infra.services.kafka_nodes import java_cmd

    def collectors(env: dict[str, str]) -> list[str]:
        cfg = load_config(_write(tmp_path, "{}"), env=env)
        return [f for f in java_cmd(cfg, "kafka.Kafka") if f.startswith("-XX:+Use") and f.endswith("GC")]

    assert collectors({}) == ["-XX:+UseG1GC"]
    assert collectors({"TIDEWATER_JVM_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}) == ["-XX:+UseSerialGC"]


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("mode: lamda\n", {}, "config error: 'mode' is 'lamda'; expected 'lambda' or 'kappa'"),
        ("kafka: {partitions: four}\n", {}, "config error: 'kafka.partitions' is 'four'; expected an integer, e.g. 4"),
        ("kafka: {partitions: 0}\n", {}, "config error: 'kafka.partitions' is 0; expected an integer >= 1"),
        ("kafka: {prot: 1}\n", {}, "config error: 'kafka.prot' is 1; expected one of the known keys:"),
        ("spark: {master: 'yarn-cluster'}\n", {}, "config error: 'spark.master' is 'yarn-cluster'; expected local[*]"),
        ("{}", {"TIDEWATER_SPARK_MASTER": "mesos://x"}, "config error: 'spark.master' is 'mesos://x' (from TIDEWATER_SPARK_MASTER); expected"),
        ("thrift: {port: 70000}\n", {}, "config error: 'thrift.port' is 70000; expected a TCP port between 1 and 65535"),
        ("kafka: [1, 2]\n", {}, "config error: 'kafka' is [1, 2]; expected a mapping with keys"),
        ("spark: {driver_memory: lots}\n", {}, "config error: 'spark.driver_memory' is 'lots'; expected a JVM size"),
        ("{}", {"TIDEWATER_SPEED_NICE": "-5"}, "'spark.speed_nice' is -5 (from TIDEWATER_SPEED_NICE); expected an integer from 0 (no change) to 19"),
        ("{}", {"TIDEWATER_WARM_UP_RECORD_ROUNDS": "-1"}, "'spark.warm_up_record_rounds' is -1 (from TIDEWATER_WARM_UP_RECORD_ROUNDS); expected an integer from 0"),
        ("spark: {warm_up_plan_rounds: 50}\n", {}, "'spark.warm_up_plan_rounds' is 50; expected an integer from 0 (no warm-up) to 10"),
        ("thrift: {max_staleness_seconds: 600}\n", {},
         "'thrift.max_staleness_seconds' is 600; expected an integer from 0 (every JDBC query reads the newest commit) to 60"),
        ("kafka: {starting_offsets: middle}\n", {}, "'kafka.starting_offsets' is 'middle'; expected 'earliest' or 'latest'"),
        ("{}", {"TIDEWATER_JVM_OPTIONS": "TieredStopAtLevel=1"}, "'jvm_options' is 'TieredStopAtLevel=1' (from TIDEWATER_JVM_OPTIONS); expected JVM flags"),
        ("jvm_options: \"-Da='b\"\n", {}, "expected JVM flags separated by spaces"),
        ("kafka: {brokers: 0}\n", {}, "'kafka.brokers' is 0; expected an integer from 1 to 9"),
        ("{}", {"TIDEWATER_KAFKA_PORT": "abc"}, "config error: 'kafka.port' is 'abc' (from TIDEWATER_KAFKA_PORT); expected an integer, e.g. 9092"),
        ("{}", {"TIDEWATER_KAFKA_BROKERS": "three"}, "'kafka.brokers' is 'three' (from TIDEWATER_KAFKA_BROKERS); expected an integer, e.g. 1"),
        ("kafka: {brokers: 3, port: 9000, controller_port: 9002}\n", {},
         "'kafka.controller_port' is 9002; expected a port whose series (+2 per broker) misses the broker ports 9000, 9002, 9004"),
        ("kafka: {brokers: 3, port: 65533}\n", {}, "'kafka.port' is 65533; expected a port low enough for 3 brokers"),
        ("{}", {"TIDEWATER_INTERPRETED_MAX_RECORDS": "-1"},
         "'spark.interpreted_max_records' is -1 (from TIDEWATER_INTERPRETED_MAX_RECORDS); expected an integer from 0 (always Spark's generated code) to 1000000"),
        ("{}", {"TIDEWATER_MAX_OFFSETS_PER_TRIGGER": "0"}, "'spark.max_offsets_per_trigger' is 0 (from TIDEWATER_MAX_OFFSETS_PER_TRIGGER); expected an integer >= 1"),
        ("{}", {"TIDEWATER_AIRFLOW_ACTIVE_DAGS": "speed,supervisor"},
         "'airflow.active_dags' is 'speed,supervisor' (from TIDEWATER_AIRFLOW_ACTIVE_DAGS); expected comma-separated DAG names out of speed, batch"),
    ],
)
def test_bad_config_names_key_and_expected_form(tmp_path: Path, text: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text), env=env)
    assert message in str(err.value)


def test_missing_explicit_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'TIDEWATER_CONFIG' is .*expected the path of an existing YAML file"):
        load_config(env={"TIDEWATER_CONFIG": str(tmp_path / "nope.yml")})


def test_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = _write(tmp_path, "mode: lamda\n")
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "--config", str(path), "config", "show"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["tidewater: config error: 'mode' is 'lamda'; expected 'lambda' or 'kappa'"]


def test_cli_bad_argument_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    for bad, said in ((("--late", "2"), "'2' is out of range; expected a fraction between 0 and 1"),
                      (("--count", "-5"), "'-5' is out of range; expected a whole number of events >= 0"),
                      (("--count", "1e3"), "'1e3' is not a whole number of events"),
                      (("--rate", "fast"), "'fast' is not a number >= 0")):
        out = subprocess.run([sys.executable, "-m", "tidewater.cli", "produce", "sensor_readings", *bad],
                             capture_output=True, text=True)
        assert out.returncode == 2
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], out.stderr


def test_config_show_prints_effective_values(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = _write(tmp_path, "kafka: {partitions: 6}\n")
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "--config", str(path), "config", "show"],
                         capture_output=True, text=True, env={"PATH": "/usr/bin", "TIDEWATER_MODE": "kappa"})
    assert out.returncode == 0, out.stderr
    assert "partitions: 6" in out.stdout and "mode: kappa" in out.stdout


def test_a_log_made_for_another_quorum_is_refused(tmp_path: Path) -> None:
    from infra.services.kafka_nodes import nodes, prepare
    from lakehouse.errors import ServiceError

    text = f"data_dir: {tmp_path / 'd'}\nkafka: {{brokers: 3}}\n"
    three = load_config(_write(tmp_path, text), env={})
    (three.data_dir / "kafka" / "log").mkdir(parents=True)
    (three.data_dir / "kafka" / "log" / "meta.properties").write_text("node.id=1\n")  # a single node's log
    with pytest.raises(ServiceError, match=r"made for 1 broker\(s\), kafka.brokers is 3; set kafka.brokers back or delete"):
        prepare(three, nodes(three))


def test_external_cluster_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    from infra.services import kafka_broker
    from infra.services.ports import free_port
    from lakehouse.errors import ServiceError

    cfg = load_config(_write(tmp_path, f"data_dir: {tmp_path / 'd'}\n"),
                      env={"TIDEWATER_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}"})
    with pytest.raises(ServiceError, match="no broker of kafka.bootstrap_servers .* answers; check that cluster or unset"):
        kafka_broker.start(cfg, timeout=1)
    assert not (cfg.data_dir / "kafka").exists(), "no local broker was set up"
    assert kafka_broker.status_rows(cfg) == [{"service": "kafka", "pid": None, "address": cfg.kafka.bootstrap,
                                              "healthy": False, "external": True}]


@pytest.mark.parametrize(("options", "flags"), [
    ("-XX:TieredStopAtLevel=1", ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m"]),
    ("-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=96m", ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=96m"]),
    ("-XX:TieredStopAtLevel=4", ["-XX:TieredStopAtLevel=4"]),
    ("-Xss4m", ["-Xss4m"]),
])
def test_c1_only_jvms_keep_the_tiered_code_cache(options: str, flags: list[str]) -> None:
    from lakehouse.config_jvm_flags import jvm_flags

    assert jvm_flags(options) == flags


@pytest.mark.parametrize(("options", "flags"), [
    ("", ["-XX:+UseParallelGC"]),
    ("-Xss4m", ["-XX:+UseParallelGC", "-Xss4m"]),
    ("-XX:+UseG1GC", ["-XX:+UseG1GC"]),
    ("-XX:+UseSerialGC -Xss4m", ["-XX:+UseSerialGC", "-Xss4m"]),
])
def test_a_spark_driver_takes_the_parallel_collector_unless_jvm_options_choose_one(options: str,
                                                                                  flags: list[str]) -> None:
    from lakehouse.config_jvm_flags import driver_flags, jvm_flags

    assert driver_flags(jvm_flags(options)) == flags


def test_drivers_get_the_driver_collector_and_the_thrift_server_keeps_the_jvms_own(tmp_path: Path) -> None:
    """One collector per JVM: a second choice stops it from starting."""
    from infra.spark_session import session_conf

    def collectors(role: str, env: dict[str, str]) -> list[str]:
        cfg = load_config(_write(tmp_path, "{}"), env=env)
        options = session_conf(cfg, "t", role=role)["spark.driver.extraJavaOptions"].split()
        return [f for f in options if f.startswith("-XX:+Use") and f.endswith("GC")]

    assert collectors("driver", {}) == ["-XX:+UseParallelGC"]
    assert collectors("thrift", {}) == []
    assert collectors("driver", {"TIDEWATER_JVM_OPTIONS": "-XX:+UseG1GC"}) == ["-XX:+UseG1GC"]
