"""``thrift.tls``: the typed setting, the files ``infra.services.thrift_tls`` makes with the JDK's keytool
(0600, made once), and the Thrift server's command, which carries no keystore password."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from lakehouse.config import TidewaterConfig, load_config
from lakehouse.errors import ConfigError

pytestmark = pytest.mark.unit


def _cfg(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> TidewaterConfig:
    path = tmp_path / "tidewater.yml"
    path.write_text(f"data_dir: {tmp_path / 'data'}\n{text}")
    return load_config(str(path), env=env or {})


def test_the_setting_is_a_typed_bool(tmp_path: Path) -> None:
    assert _cfg(tmp_path, "").thrift.tls is False
    assert _cfg(tmp_path, "thrift: {tls: true}\n").thrift.tls is True
    assert _cfg(tmp_path, "", {"TIDEWATER_THRIFT_TLS": "true"}).thrift.tls is True
    with pytest.raises(ConfigError, match="'thrift.tls' is 'on'; expected true or false"):
        _cfg(tmp_path, "thrift: {tls: 'on'}\n")


def test_files_are_made_once_private_and_name_the_loopback_addresses(tmp_path: Path) -> None:
    from infra.services import thrift_server, thrift_tls

    cfg = _cfg(tmp_path, "thrift: {tls: true, port: 10443}\n")
    settings = thrift_tls.server_settings(cfg)
    files = [thrift_tls.password_file(cfg), thrift_tls.keystore(cfg), thrift_tls.certificate(cfg), thrift_tls.truststore(cfg)]
    assert {oct(f.stat().st_mode & 0o777) for f in files} == {"0o600"}
    stamps = [f.stat().st_mtime_ns for f in files]
    thrift_tls.ensure(cfg)
    assert [f.stat().st_mtime_ns for f in files] == stamps, "a second start made new files"
    password = thrift_tls.password_file(cfg).read_text().strip()
    assert settings == {"hive.server2.use.SSL": "true", "hive.server2.keystore.path": str(thrift_tls.keystore(cfg)),
                        "hive.server2.keystore.password": password}
    assert thrift_server.jdbc_url(cfg) == ("jdbc:hive2://127.0.0.1:10443/default;ssl=true;"
                                           f"sslTrustStore={thrift_tls.truststore(cfg)}")
    cert = ssl._ssl._test_decode_cert(str(thrift_tls.certificate(cfg)))  # type: ignore[attr-defined]
    assert {("DNS", "localhost"), ("IP Address", "127.0.0.1")} <= set(cert["subjectAltName"]), cert
    thrift_tls.ssl_context(cfg)  # the certificate loads as the only trusted one


def test_the_keystore_password_stays_off_the_command_line(tmp_path: Path) -> None:
    from infra.services import thrift_server, thrift_tls

    cfg = _cfg(tmp_path, "thrift: {tls: true}\n")
    argv, secret = thrift_server.command(cfg)
    password = thrift_tls.password_file(cfg).read_text().strip()
    assert secret["spark.hadoop.hive.server2.keystore.password"] == password
    assert not any(password in arg for arg in argv)
    assert "--conf" in argv and "spark.hadoop.hive.server2.use.SSL=true" in argv
    plain_argv, plain_secret = thrift_server.command(_cfg(tmp_path, ""))
    assert not any("use.SSL" in arg for arg in plain_argv) and not any("keystore" in key for key in plain_secret)


def test_a_server_started_with_the_other_transport_is_named_changed(tmp_path: Path) -> None:
    from infra.services import thrift_tls
    from lakehouse import naming

    plain, tls = _cfg(tmp_path, ""), _cfg(tmp_path, "thrift: {tls: true}\n")
    naming.run_dir(plain).mkdir(parents=True)
    assert not thrift_tls.changed(plain) and thrift_tls.changed(tls)  # no note: started without TLS
    thrift_tls.record(tls)
    assert thrift_tls.changed(plain) and not thrift_tls.changed(tls)
    thrift_tls.record(plain)
    assert not thrift_tls.changed(plain) and thrift_tls.changed(tls)
