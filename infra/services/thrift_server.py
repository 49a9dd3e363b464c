"""Spark Thrift Server (HiveServer2 protocol) for BI tools, sharing the Tidewater catalog.

Started with the pyspark distribution's ``spark-submit`` and the same Spark settings as every job
(``session_conf``: Delta, jars, Derby metastore, warehouse), so ``serving.<p>`` and every layer table
are visible by name. The driver program is ``spark_jobs/serving/thrift_service.py``: it starts HiveServer2 on
its session (``HiveThriftServer2.startWithContext``) and keeps each ``serving.<p>`` in the server's
memory, rebuilt when its tables change (``spark_jobs.serving.cache``), and its SQL parser sends reads of
``serving.<p>`` there (``infra/java/io/tidewater/spark/ServingParser.java``, built by ``infra.jars``);
other tables are read at their newest commit (Delta's ``stalenessLimit`` stays 0: a view over two tables read
with snapshots of different ages could pair a new cutoff with ``batch.<p>`` from before its publish).
JDBC URL: ``jdbc:hive2://127.0.0.1:<thrift.port>/default`` with a user and password.

Class path: the Delta and Kafka jars go on the driver's own class path (``--driver-class-path``),
not only in ``spark.jars``. ``spark.jars`` puts them in a child class loader that HiveServer2's
session and statement threads do not use: the Hive JDBC driver (a database in the URL) failed with
``Cannot find catalog plugin class ... DeltaCatalog``, and queries after a Delta commit failed with
``NoClassDefFoundError: org/apache/spark/sql/delta/actions/Protocol$$anonfun$1`` (tests/integration/
test_jdbc.py reproduces both). ``spark.jars`` stays for executors on a non-local master; the child
loader delegates to its parent first, so each class still has one definition.

Secrets: settings that hold a password (the metastore's) go in ``<data_dir>/secrets/
thrift_server.properties`` (mode 0600, ``--properties-file``), never on the command line.

Security (``infra.services.thrift_access``; tests/integration/test_bi_security.py):
* authentication: ``hive.server2.authentication=CUSTOM``, every session logs in with a user and password,
  checked against salted hashes (``io.tidewater.spark.auth.PasswordFileAuthenticator``); no user may
  act as another (``hive.server2.allow.user.substitution=false``), and HiveServer2 runs each operation
  as its session's user (``hive.server2.enable.doAs``), which is how the access control knows the user;
* authorisation: the ``AccessControlExtension`` checks every analyzed plan against ``infra/thrift_access.json``;
  ``spark.sql.variable.substitute=false`` (``${...}`` would read the server's settings, the metastore
  password among them). ``spark.sql.runSQLOnFiles`` stays on: the serving views read their Delta tables
  as ``delta.`<path>```; the access control refuses file paths in a client's statements instead;
* the listener binds to loopback only (``hive.server2.thrift.bind.host``); passwords cross the socket in
  SASL PLAIN, in clear text unless ``thrift.tls`` puts the transport in TLS (``infra.services.thrift_tls``).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra import local_fs
from infra.jars import build_tidewater_jar, pyspark_jars_dir
from infra.jvm import require_java
from infra.jvm_scratch import THRIFT_OWNER, scratch_folder, scratch_settings
from infra.services import thrift_access, thrift_tls
from infra.services.process import ManagedProcess, port_open, start_healthy
from infra.spark_session import session_conf
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError
from lakehouse.pipeline import available_pipelines

MAIN_PROGRAM = Path(__file__).resolve().parents[2] / "spark_jobs" / "serving" / "thrift_service.py"  # run by path, not imported
STALENESS_KEY = "spark.databricks.delta.stalenessLimit"
# spark.sql.hive.metastore.sharedPrefixes when unset (Spark 4.1, HiveUtils)
DEFAULT_SHARED_PREFIXES = ("com.mysql.jdbc", "com.mysql.cj", "org.postgresql", "com.microsoft.sqlserver", "oracle.jdbc")
SERVING_REDIRECT = "io.tidewater.spark.ServingRedirectExtension"  # infra/java: serving.<p> reads from memory
ACCESS_CONTROL = "io.tidewater.spark.authz.AccessControlExtension"  # after the redirect: its parser wraps it
# HiveServer2 would run statements as this user instead of each session's (hive shims' Utils.getUGI)
USER_OVERRIDES = ("HADOOP_USER_NAME", "HADOOP_PROXY_USER")


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("thrift_server", naming.run_dir(cfg), naming.logs_dir(cfg))


def log_evidence(cfg: TidewaterConfig, errors: int = 3, context: int = 12, last: int = 10) -> str:
    """What a failed check keeps of the server's log before a test stack is deleted: the first
    ``errors`` ERROR entries with ``context`` lines each (the cause: the last lines of a server whose
    SparkContext stopped are only the stop's own stack trace), then the last ``last`` lines."""
    proc = _process(cfg)
    try:
        lines = proc.log_file.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    starts = [i for i, line in enumerate(lines) if " ERROR " in line or "Exception in thread" in line][:errors]
    parts = ["\n".join(lines[i:i + context]) for i in starts]
    return "\n...\n".join([*parts, "last lines:", "\n".join(lines[-last:])])


def spark_submit() -> Path:
    import pyspark

    require_java()  # spark-submit's launcher would fail with "JAVA_HOME is not set" in the log only
    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


def jdbc_url(cfg: TidewaterConfig) -> str:
    """The Hive JDBC URL (with ``thrift.tls``: ``;ssl=true;sslTrustStore=…``); the user and password are
    given apart (beeline ``-n``, ``-w <password file>``)."""
    return f"jdbc:hive2://{cfg.thrift.host}:{cfg.thrift.port}/default{thrift_tls.jdbc_options(cfg)}"


def driver_class_path(conf: dict[str, str]) -> str:
    """The session's driver class path (the Derby client, hive-llap-common) plus every jar of ``spark.jars``."""
    entries = [e for e in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if e]
    entries += [j for j in conf.get("spark.jars", "").split(",") if j and j not in entries]
    return os.pathsep.join(entries)


def isolated_metastore_client(conf: dict[str, str]) -> dict[str, str]:
    """Spark's metastore client in a class loader of its own (the same Hive 2.3.10 jars, loaded apart).

    HiveServer2 closes a session with ``SessionState.close()``, which closes the thread's Hive client
    (``Hive.closeCurrent()``, unsynchronized). With the built-in client that is the ONE client every
    session's catalog calls share (Spark puts it in the thread's slot at each call), so a client
    closing its connection could null it under another client's query: ``Cannot invoke
    IMetaStoreClient.getDatabase(String) because the return value of Hive.getMSC() is null`` (once in
    the robustness test of tests/integration/test_jdbc.py). Loaded apart, the catalog's ``Hive`` is
    another class than the one HiveServer2's sessions close, so a closing session never touches it."""
    jars = pyspark_jars_dir()
    drivers = [e for e in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if e.endswith(".jar")]
    return {"spark.sql.hive.metastore.jars": "path",
            "spark.sql.hive.metastore.jars.path": ",".join([f"file://{jars}/*", *(f"file://{d}" for d in drivers)]),
            # Spark's default shared prefixes, and the local file system the client's Hadoop conf names
            "spark.sql.hive.metastore.sharedPrefixes": ",".join([*DEFAULT_SHARED_PREFIXES, local_fs.PACKAGE])}


def cache_state_file(cfg: TidewaterConfig) -> Path:
    """What the serving cache holds (``spark_jobs.serving.cache``: view, table versions, build time)."""
    return naming.run_dir(cfg) / "thrift_serving_cache.json"


def read_cache_state(path: Path) -> dict[str, Any]:
    """The serving cache's state file (written by ``spark_jobs.serving.cache``); {} before the first check."""
    try:
        return dict(json.loads(path.read_text()))
    except (FileNotFoundError, ValueError):
        return {}


def properties_file(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "thrift_server.properties"


def _write_properties(path: Path, conf: dict[str, str]) -> None:
    def escape(value: str) -> str:  # java.util.Properties syntax
        value = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return "\\" + value if value[:1].isspace() else value

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.writelines(f"{key}={escape(value)}\n" for key, value in conf.items())
    os.chmod(path, 0o600)


def command(cfg: TidewaterConfig) -> tuple[list[str], dict[str, str]]:
    """spark-submit's argv, and the settings kept off it (passwords: for ``properties_file``)."""
    conf = session_conf(cfg, "tidewater-thrift-server", role="thrift")
    conf.update(scratch_settings(scratch_folder(cfg, THRIFT_OWNER), conf["spark.driver.extraJavaOptions"]))
    conf.update(isolated_metastore_client(conf))
    conf["spark.sql.extensions"] += f",{SERVING_REDIRECT},{ACCESS_CONTROL}"
    conf["spark.sql.variable.substitute"] = "false"  # see the module's docstring
    class_path = driver_class_path(conf)
    if str(build_tidewater_jar()) not in class_path.split(os.pathsep):  # there already with infra.local_fs
        class_path = os.pathsep.join([class_path, str(build_tidewater_jar())])
    conf.pop("spark.driver.extraClassPath", None)
    server = {"hive.server2.thrift.bind.host": cfg.thrift.host, "hive.server2.thrift.port": str(cfg.thrift.port),
              "hive.server2.authentication": thrift_access.AUTH, "hive.server2.transport.mode": "binary",
              "hive.server2.enable.doAs": "true", "hive.server2.allow.user.substitution": "false",
              **thrift_tls.server_settings(cfg)}
    conf.update({f"spark.hadoop.{key}": value for key, value in server.items()})  # HiveServer2 reads Hadoop's conf
    conf[STALENESS_KEY] = "0"  # every query reads each table's newest commit (see the module's docstring)
    secret = {k: conf.pop(k) for k in list(conf) if "password" in k.lower()}
    argv = [str(spark_submit()), "--name", conf.pop("spark.app.name"),
            "--master", conf.pop("spark.master"), "--driver-memory", conf.pop("spark.driver.memory"),
            "--driver-class-path", class_path, "--properties-file", str(properties_file(cfg))]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]

    views = [naming.table("serving", name) for name in available_pipelines()]
    argv += [str(MAIN_PROGRAM), "--state", str(cache_state_file(cfg)), "--every", str(cfg.thrift.max_staleness_seconds),
             "--credentials", str(thrift_access.credentials_file(cfg)), "--access", str(thrift_access.RULES_FILE), *views]
    return argv, secret


def start(cfg: TidewaterConfig, timeout: float = 300) -> int:
    proc = _process(cfg)
    if proc.running():
        if not thrift_tls.changed(cfg):
            return proc.pid() or 0
        print(f"thrift: restarting pid {proc.pid()}: thrift.tls is now {str(cfg.thrift.tls).lower()}", file=sys.stderr,
              flush=True)
        stop(cfg)
    if cfg.thrift.host not in ("127.0.0.1", "localhost", "::1"):
        raise ServiceError(f"thrift: thrift.host is {cfg.thrift.host!r}; the server binds to loopback only: "
                           "set thrift.host to 127.0.0.1")
    overridden = [name for name in USER_OVERRIDES if os.environ.get(name)]
    if overridden:
        raise ServiceError(f"thrift: {overridden[0]} is set; the Thrift server would run every client's statements "
                           f"as that user: unset {overridden[0]}")
    if port_open(cfg.thrift.host, cfg.thrift.port):
        raise ServiceError(f"thrift: port {cfg.thrift.port} is already in use; set thrift.port or TIDEWATER_THRIFT_PORT")
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(naming.logs_dir(cfg)), "SPARK_PID_DIR": str(naming.run_dir(cfg))}
    argv, secret = command(cfg)
    scratch_folder(cfg, THRIFT_OWNER, fresh=True)  # a killed server's files; none runs now
    cache_state_file(cfg).unlink(missing_ok=True)  # a previous server's: never read as this one's
    _write_properties(properties_file(cfg), secret)
    thrift_access.write_credentials(cfg)
    pid = start_healthy(proc, argv, lambda: serving_ready(cfg), timeout, "thrift: the Thrift server did not start",
                        env=env, cwd=cfg.data_dir)  # start_healthy's 0.5 s: a port probe and a file check
    thrift_tls.record(cfg)
    return pid


def stop(cfg: TidewaterConfig) -> bool:
    return _process(cfg).stop(timeout=60)


def healthy(cfg: TidewaterConfig) -> bool:
    return port_open(cfg.thrift.host, cfg.thrift.port)


def serving_ready(cfg: TidewaterConfig) -> bool:
    """Listening and, with the serving cache on, past the keeper's first round (its state file exists):
    every ``serving.<p>`` that exists is then in memory (or its error recorded), so the first BI queries
    after a start do not all read the tables on a cold JVM (scenario 5's first 20 queries: p95 8-10 s)."""
    return healthy(cfg) and (not cfg.thrift.max_staleness_seconds or cache_state_file(cfg).exists())


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    return {"service": "thrift", "pid": proc.pid(), "address": jdbc_url(cfg), "healthy": healthy(cfg),
            "auth": f"{thrift_access.AUTH}: users {', '.join(thrift_access.BI_USERS)}; {thrift_access.where(cfg)}",
            "transport": f"TLS (certificate {thrift_tls.certificate(cfg)})" if cfg.thrift.tls else "plain TCP, loopback only",
            "serving_cache": cache_summary(cfg), "log": str(proc.log_file)}


def cache_summary(cfg: TidewaterConfig) -> str:
    """One line on the serving cache, from the keeper's state file."""
    if not cfg.thrift.max_staleness_seconds:
        return "off (thrift.max_staleness_seconds: 0)"
    state = read_cache_state(cache_state_file(cfg))
    if not state:
        return "no state yet"
    age = (datetime.now(UTC) - datetime.fromisoformat(state["checked_at"])).total_seconds()
    cached = sorted(v for v, facts in state.get("views", {}).items() if facts.get("cached"))
    return (f"at most {cfg.thrift.max_staleness_seconds} s behind; checked {age:.0f} s ago; "
            f"cached: {', '.join(cached) or 'none'}")
