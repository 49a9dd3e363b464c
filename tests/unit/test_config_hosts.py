"""The hosts of the services: loopback for those Tidewater starts and binds, never a wildcard bind
address, another host only for an external Kafka cluster or PostgreSQL server."""

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


LOCAL_ONLY = "expected a loopback address (127.0.0.1)"
NOT_A_WILDCARD = "expected the address of one host, not a wildcard bind address"


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("kafka: {host: 0.0.0.0}\n", {}, f"'kafka.host' is '0.0.0.0'; {LOCAL_ONLY}: Tidewater's own brokers"),
        ("kafka: {host: '::'}\n", {}, f"'kafka.host' is '::'; {LOCAL_ONLY}: Tidewater's own brokers"),
        ("kafka: {host: 10.1.2.3}\n", {}, f"'kafka.host' is '10.1.2.3'; {LOCAL_ONLY}: Tidewater's own brokers listen "
         "on it; for an external cluster set kafka.bootstrap_servers"),
        ("kafka: {host: 0.0.0.0, bootstrap_servers: 'k1:9092'}\n", {}, f"'kafka.host' is '0.0.0.0'; {NOT_A_WILDCARD}"),
        ("{}", {"TIDEWATER_KAFKA_BOOTSTRAP": "0.0.0.0:9092"},
         "'kafka.bootstrap_servers' is '0.0.0.0:9092' (from TIDEWATER_KAFKA_BOOTSTRAP); expected HOST:PORT pairs of "
         "the cluster's brokers, not a wildcard bind address"),
        ("{}", {"TIDEWATER_KAFKA_BOOTSTRAP": "k1:9092,[::]:9092"}, "'kafka.bootstrap_servers' is 'k1:9092,[::]:9092'"),
        ("metastore: {host: 0.0.0.0}\n", {}, f"'metastore.host' is '0.0.0.0'; {LOCAL_ONLY}: Tidewater starts the "
         "Derby metastore itself"),
        ("metastore: {host: 192.168.1.20}\n", {}, f"'metastore.host' is '192.168.1.20'; {LOCAL_ONLY}: Tidewater "
         "starts the Derby metastore itself"),
        ("airflow: {host: 0.0.0.0}\n", {}, f"'airflow.host' is '0.0.0.0'; {LOCAL_ONLY}: Tidewater starts Airflow's"),
        ("airflow: {host: airflow.example.com}\n", {}, f"'airflow.host' is 'airflow.example.com'; {LOCAL_ONLY}: "
         "Tidewater starts Airflow's API server itself"),
        ("thrift: {host: 0.0.0.0}\n", {}, f"'thrift.host' is '0.0.0.0'; {LOCAL_ONLY}: the Thrift server"),
        ("thrift: {host: 10.0.0.7}\n", {}, f"'thrift.host' is '10.0.0.7'; {LOCAL_ONLY}: the Thrift server"),
        ("postgres: {host: 0.0.0.0}\n", {}, f"'postgres.host' is '0.0.0.0'; {LOCAL_ONLY} while postgres.managed"),
        ("postgres: {host: '0.0.0.0', managed: false}\n", {}, f"'postgres.host' is '0.0.0.0'; {NOT_A_WILDCARD}"),
        ("postgres: {host: '*', managed: false}\n", {}, f"'postgres.host' is '*'; {NOT_A_WILDCARD}"),
        ("postgres: {host: '::', managed: false}\n", {}, f"'postgres.host' is '::'; {NOT_A_WILDCARD}"),
        ("postgres: {host: db.example.com}\n", {}, f"'postgres.host' is 'db.example.com'; {LOCAL_ONLY}"),
        ("bi: {host: 0.0.0.0}\n", {}, f"'bi.host' is '0.0.0.0'; {LOCAL_ONLY}"),
        ("job_service: {host: '0'}\n", {}, f"'job_service.host' is '0'; {LOCAL_ONLY}"),
    ],
)
def test_hosts_of_services_tidewater_binds_are_loopback(tmp_path: Path, text: str, env: dict[str, str],
                                                         message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text), env=env)
    assert message in str(err.value), err.value


def test_remote_hosts_stay_allowed_where_the_service_is_external(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "postgres: {host: db.example.com, managed: false}\n"
                                       "kafka: {host: 10.1.2.3, bootstrap_servers: 'k1:9092,k2:9092'}\n"), env={})
    assert (cfg.postgres.host, cfg.kafka.bootstrap) == ("db.example.com", "k1:9092,k2:9092")
    assert load_config(_write(tmp_path, "kafka: {host: localhost}\nthrift: {host: '::1'}\n"), env={}).kafka.host == "localhost"
