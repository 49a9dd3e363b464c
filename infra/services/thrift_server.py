"""Spark Thrift Server (HiveServer2 protocol) for BI tools, sharing the Tidewater catalog.

Started with the pyspark distribution's ``spark-submit --class ...HiveThriftServer2`` and the same
Spark settings as every job (``session_conf``: Delta, jars, Derby metastore, warehouse), so
``serving.<p>`` and every layer table are visible by name. JDBC URL:
``jdbc:hive2://127.0.0.1:<thrift.port>/default;auth=noSasl``.

Authentication: ``hive.server2.authentication=NOSASL``, with the listener bound to 127.0.0.1 only
(``hive.server2.thrift.bind.host``), so only local users reach it; no password exists, hence none
is defaulted. Put an authenticating proxy in front before exposing it beyond loopback.
"""

from __future__ import annotations

from pathlib import Path

from infra.services.process import ManagedProcess, port_open, wait_until
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

MAIN_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
AUTH = "NOSASL"


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("thrift_server", naming.run_dir(cfg), naming.logs_dir(cfg))


def spark_submit() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


def jdbc_url(cfg: TidewaterConfig) -> str:
    return f"jdbc:hive2://{cfg.thrift.host}:{cfg.thrift.port}/default;auth=noSasl"


def command(cfg: TidewaterConfig) -> list[str]:
    from lakehouse.spark_session import session_conf

    conf = session_conf(cfg, "tidewater-thrift-server")
    argv = [str(spark_submit()), "--class", MAIN_CLASS, "--name", conf.pop("spark.app.name"),
            "--master", conf.pop("spark.master"), "--driver-memory", conf.pop("spark.driver.memory"),
            "--driver-class-path", conf.pop("spark.driver.extraClassPath")]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv.append("spark-internal")
    for key, value in (("hive.server2.thrift.bind.host", cfg.thrift.host), ("hive.server2.thrift.port", str(cfg.thrift.port)),
                       ("hive.server2.authentication", AUTH), ("hive.server2.transport.mode", "binary")):
        argv += ["--hiveconf", f"{key}={value}"]
    return argv


def start(cfg: TidewaterConfig, timeout: float = 300) -> int:
    proc = _process(cfg)
    if proc.running():
        return proc.pid() or 0
    if cfg.thrift.host not in ("127.0.0.1", "localhost", "::1"):
        raise ServiceError(f"thrift: thrift.host is {cfg.thrift.host!r}; the server has no authentication, so it "
                           "binds to loopback only: set thrift.host to 127.0.0.1")
    if port_open(cfg.thrift.host, cfg.thrift.port):
        raise ServiceError(f"thrift: port {cfg.thrift.port} is already in use; set thrift.port or TIDEWATER_THRIFT_PORT")
    import os

    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", "python3"),
           "SPARK_LOG_DIR": str(naming.logs_dir(cfg)), "SPARK_PID_DIR": str(naming.run_dir(cfg))}
    pid = proc.start(command(cfg), env=env, cwd=cfg.data_dir)
    if not wait_until(lambda: healthy(cfg) or not proc.running(), timeout, interval=1) or not proc.running():
        raise ServiceError(f"thrift: the Thrift server did not start; log {proc.log_file}:\n{proc.tail(15)}")
    return pid


def stop(cfg: TidewaterConfig) -> bool:
    return _process(cfg).stop(timeout=60)


def healthy(cfg: TidewaterConfig) -> bool:
    return port_open(cfg.thrift.host, cfg.thrift.port)


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    return {"service": "thrift", "pid": proc.pid(), "address": jdbc_url(cfg), "healthy": healthy(cfg),
            "auth": f"{AUTH} (loopback only)", "log": str(proc.log_file)}
