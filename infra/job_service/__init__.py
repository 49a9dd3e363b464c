"""The Tidewater job service: one long-running Python process holding one classic SparkSession.

Spark-bound CLI commands (``batch``, ``check``, ``sql``, ``reconcile``, ``serving``, ``maintenance``)
are forwarded to it by the ``tidewater`` client (infra/job_service/client.py) and run there in-process,
each in a thread with its own ``spark.newSession()``, through the CLI's own dispatch: no JVM start per
command or Airflow task. The server is infra/job_service/server.py; ``python -m tidewater.job_host`` runs it.

* Binds ``job_service.host`` (loopback only) : ``job_service.port``; log ``logs/job_service.log``.
* Authentication: a random token generated at the first start into ``<data_dir>/secrets/
  job_service.token`` (mode 0600); clients send it in the ``X-Tidewater-Token`` header.
* ``fingerprint(cfg)``: the configuration and the code's file stamps. A client whose fingerprint
  differs (another data folder, mode, port, or edited code) runs the command locally instead.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import urllib.request
from pathlib import Path
from typing import Any

from infra.secret_files import create_once
from infra.services.process import ManagedProcess, port_open, start_healthy
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

REPO = Path(__file__).resolve().parents[2]
HOST_MODULE = "tidewater.job_host"  # the process entry point (the application wires the CLI in)
TOKEN_HEADER = "X-Tidewater-Token"
CODE_PACKAGES = ("tidewater", "spark_jobs", "expectations", "infra", "lakehouse")


def _process(cfg: TidewaterConfig) -> ManagedProcess:
    return ManagedProcess("job_service", naming.run_dir(cfg), naming.logs_dir(cfg))


def log_file(cfg: TidewaterConfig) -> Path:
    return _process(cfg).log_file


def base_url(cfg: TidewaterConfig) -> str:
    return f"http://{cfg.job_service.host}:{cfg.job_service.port}"


def token_file(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "job_service.token"


def token(cfg: TidewaterConfig, create: bool = False) -> str | None:
    """The service's token; generated (0600) when ``create`` and absent; None if there is none."""
    path = token_file(cfg)
    if create:
        create_once(path, lambda: secrets.token_urlsafe(32))
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def code_stamp() -> list[tuple[str, int, int]]:
    """(path, mtime_ns, size) of every Python module the service runs: edited code = another service."""
    stamp = []
    for package in CODE_PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            st = path.stat()
            stamp.append((str(path.relative_to(REPO)), st.st_mtime_ns, st.st_size))
    return stamp


def fingerprint(cfg: TidewaterConfig) -> str:
    """Same value in client and service = the service runs this configuration and this code."""
    data = json.dumps({"config": cfg.as_dict(), "code": code_stamp()}, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def request(cfg: TidewaterConfig, path: str, body: dict[str, Any] | None = None,
            timeout: float = 5.0) -> Any:
    """An authenticated request (GET, or POST with ``body``); the caller reads the response."""
    headers = {TOKEN_HEADER: token(cfg) or "", "Content-Type": "application/json"}
    req = urllib.request.Request(f"{base_url(cfg)}{path}", headers=headers,
                                 data=None if body is None else json.dumps(body).encode())
    return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - loopback URL from the config


def health(cfg: TidewaterConfig) -> dict[str, Any]:
    """``/health``: pid, fingerprint, commands running and served; {} when down or refusing us."""
    try:
        with request(cfg, "/health", timeout=3) as resp:
            return dict(json.loads(resp.read()))
    except (OSError, ValueError):
        return {}


def healthy(cfg: TidewaterConfig) -> bool:
    return bool(health(cfg).get("pid"))


def enabled(cfg: TidewaterConfig) -> bool:
    return cfg.job_service.enabled


def stale(cfg: TidewaterConfig, report: dict[str, Any]) -> bool:
    """The running service (its ``/health`` report) serves another configuration or code than this
    process has: edited since it started, so every command would run locally, each with a JVM start."""
    return bool(report.get("fingerprint")) and report["fingerprint"] != fingerprint(cfg)


def start(cfg: TidewaterConfig, timeout: float = 300) -> int:
    """Start the service; one that runs stale code and has no command running is restarted (``up``
    after an edit or a pull), one busy with commands is left running (they run locally meanwhile)."""
    proc = _process(cfg)
    if proc.running():
        report = health(cfg)
        if not stale(cfg, report) or report.get("running"):
            return proc.pid() or 0
        print(f"job_service: restarting pid {proc.pid()}, which runs another configuration or an older copy of "
              "the code", file=sys.stderr, flush=True)
        stop(cfg)
    if port_open(cfg.job_service.host, cfg.job_service.port):
        raise ServiceError(f"job_service: port {cfg.job_service.port} is already in use; "
                           "set job_service.port or TIDEWATER_JOB_SERVICE_PORT")
    token(cfg, create=True)
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO), "TIDEWATER_DATA_DIR": str(cfg.data_dir),
           **({"TIDEWATER_CONFIG": cfg.source} if cfg.source != "<defaults>" else {})}
    return start_healthy(proc, [sys.executable, "-m", HOST_MODULE], lambda: healthy(cfg), timeout,
                         "job_service: the job service did not start", interval=1, env=env, cwd=REPO,
                         marker=HOST_MODULE)


def stop(cfg: TidewaterConfig) -> bool:
    """SIGTERM: the service finishes running commands (up to 60 s), stops Spark and exits."""
    return _process(cfg).stop(timeout=90)


def status(cfg: TidewaterConfig) -> dict[str, object]:
    proc = _process(cfg)
    report = health(cfg)
    row: dict[str, object] = {"service": "jobs", "pid": proc.pid(), "address": base_url(cfg), "healthy": bool(report)}
    if report:
        row["commands"] = f"{report['running']} running, {report['served']} served"
        if stale(cfg, report):
            row["code"] = "stale (another configuration or older code: commands run locally; 'tidewater up' restarts it)"
    return {**row, "auth": f"token in {token_file(cfg)}", "log": str(proc.log_file)}
