"""Optional TLS for the Thrift server's transport (``thrift.tls: true``, env ``TIDEWATER_THRIFT_TLS``).

``ensure(cfg)`` generates, once, with the JDK's ``keytool``, into ``<data_dir>/secrets`` (every file 0600):

* ``thrift_tls.keystore.password``: the keystore's password (``secrets.token_urlsafe``); keytool reads it
  with ``-storepass:file``, the server from its 0600 properties file: never on a command line;
* ``thrift_tls.keystore.p12``: an RSA key and a self-signed certificate for ``localhost``, ``127.0.0.1`` and
  ``::1`` (the addresses the server may bind), valid ``VALIDITY_DAYS``;
* ``thrift_tls.cert.pem``: that certificate, for Python clients (``ssl`` ``cafile``);
* ``thrift_tls.truststore.p12``: the same certificate for Java clients (beeline, DBeaver: the JDBC URL's
  ``sslTrustStore``). It holds no secret, so it is written without encryption or integrity password and
  Java reads it with none: no truststore password in any URL.

The server's settings (``server_settings``) turn on HiveServer2's ``hive.server2.use.SSL`` in the binary
transport; a plain TCP client is then refused. ``transport`` is the client side for pyhive: SASL PLAIN (the
user and password of ``thrift_access``) inside a TLS socket that checks the certificate and the host name.
"""

from __future__ import annotations

import os
import secrets
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

from infra.secret_files import create_once
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

ALIAS = "tidewater-thrift"
VALIDITY_DAYS = 825
SUBJECT_ALT_NAMES = "dns:localhost,ip:127.0.0.1,ip:::1"
# the truststore holds only the public certificate: no encryption, no integrity password (Java reads it with none)
NO_PASSWORD_STORE = ["-J-Dkeystore.pkcs12.certProtectionAlgorithm=NONE", "-J-Dkeystore.pkcs12.macAlgorithm=NONE"]


def password_file(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "thrift_tls.keystore.password"


def keystore(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "thrift_tls.keystore.p12"


def certificate(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "thrift_tls.cert.pem"


def truststore(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "thrift_tls.truststore.p12"


def _keytool(*args: str) -> None:
    tool = shutil.which("keytool")
    if tool is None:
        raise ServiceError("thrift: 'keytool' not found (thrift.tls needs it to make the certificate); install a "
                           "JDK 17 (apt-get install openjdk-17-jdk-headless)")
    result = subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise ServiceError(f"thrift: keytool {args[0]} failed: {(result.stdout + result.stderr).strip()[-800:]}")


def ensure(cfg: TidewaterConfig) -> None:
    """The password, keystore, certificate and truststore, each made once (a missing one is made again
    from the keystore; a missing keystore means a new key and certificate)."""
    pw = password_file(cfg)
    create_once(pw, lambda: secrets.token_urlsafe(24))
    store = ["-storetype", "PKCS12", "-storepass:file", str(pw)]
    if not keystore(cfg).exists():
        for stale in (certificate(cfg), truststore(cfg)):
            stale.unlink(missing_ok=True)
        partial = keystore(cfg).with_suffix(".partial")
        partial.unlink(missing_ok=True)
        _keytool("-genkeypair", "-alias", ALIAS, "-keyalg", "RSA", "-keysize", "2048", "-validity", str(VALIDITY_DAYS),
                 "-dname", "CN=localhost, O=Tidewater", "-ext", f"SAN={SUBJECT_ALT_NAMES}", "-keystore", str(partial),
                 *store, "-keypass:file", str(pw))
        os.chmod(partial, 0o600)
        os.replace(partial, keystore(cfg))
    if not certificate(cfg).exists():
        _keytool("-exportcert", "-rfc", "-alias", ALIAS, "-keystore", str(keystore(cfg)), *store,
                 "-file", str(certificate(cfg)))
    if not truststore(cfg).exists():
        _keytool(*NO_PASSWORD_STORE, "-importcert", "-noprompt", "-alias", ALIAS, "-file", str(certificate(cfg)),
                 "-keystore", str(truststore(cfg)), *store)
    for path in (pw, keystore(cfg), certificate(cfg), truststore(cfg)):
        os.chmod(path, 0o600)


def server_settings(cfg: TidewaterConfig) -> dict[str, str]:
    """HiveServer2's TLS settings (the files made by ``ensure`` first); the password's key has "password"
    in it, so it goes to the server's 0600 properties file, not its command line (``thrift_server.command``)."""
    if not cfg.thrift.tls:
        return {}
    ensure(cfg)
    return {"hive.server2.use.SSL": "true", "hive.server2.keystore.path": str(keystore(cfg)),
            "hive.server2.keystore.password": password_file(cfg).read_text().strip()}


def _started_with(cfg: TidewaterConfig) -> Path:
    return naming.run_dir(cfg) / "thrift_server.tls"


def record(cfg: TidewaterConfig) -> None:
    """Note the transport a server was started with (``changed`` compares the configuration with it)."""
    _started_with(cfg).write_text("true\n" if cfg.thrift.tls else "false\n")


def changed(cfg: TidewaterConfig) -> bool:
    """The running server speaks the other transport than ``thrift.tls`` asks for (a server started
    without a note had no TLS)."""
    try:
        running = _started_with(cfg).read_text().strip() == "true"
    except FileNotFoundError:
        running = False
    return running != cfg.thrift.tls


def jdbc_options(cfg: TidewaterConfig) -> str:
    """The Hive JDBC URL's TLS part: ``;ssl=true;sslTrustStore=<truststore>`` (no password: it holds none)."""
    return f";ssl=true;sslTrustStore={truststore(cfg)}" if cfg.thrift.tls else ""


def ssl_context(cfg: TidewaterConfig) -> ssl.SSLContext:
    """Trusts the generated certificate only, and checks the host name against it."""
    return ssl.create_default_context(cafile=str(certificate(cfg)))


def transport(cfg: TidewaterConfig, user: str, password: str) -> Any:  # thrift is untyped
    """pyhive's ``thrift_transport`` to this configuration's server over TLS."""
    return tls_transport(cfg.thrift.host, cfg.thrift.port, certificate(cfg), user, password)


def tls_transport(host: str, port: int, cafile: Path | str, user: str, password: str) -> Any:
    """SASL PLAIN with ``user`` and ``password`` in a TLS socket that trusts ``cafile`` only and checks the
    host name (Superset's connection calls this too: infra/superset/superset_config.py)."""
    import thrift_sasl
    from pyhive.hive import get_installed_sasl
    from thrift.transport.TSSLSocket import TSSLSocket

    trusted = ssl.create_default_context(cafile=str(cafile))
    sock = TSSLSocket(host, port, ssl_context=trusted, server_hostname=host)
    return thrift_sasl.TSaslClientTransport(
        lambda: get_installed_sasl(host=host, sasl_auth="PLAIN", username=user, password=password), "PLAIN", sock)
