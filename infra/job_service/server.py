"""The job service's server: Tidewater CLI commands run in-process on one warm SparkSession.

Protocol (HTTP/1.0 + JSON on 127.0.0.1, every request with the token header):

* ``GET /health`` -> ``{"pid", "fingerprint", "running", "served", "spark"}``.
* ``POST /run`` with ``{"argv": [...], "fingerprint": "..."}`` -> 401 (wrong token), 409 (another
  configuration or code: the client runs the command itself), or 200 and a stream of JSON lines
  ``{"out": text}``, ``{"err": text}``, ``{"ping": null}`` (every 10 s) and last ``{"exit": code}``.

Each command runs in a thread of its own with a fresh ``spark.newSession()`` (shared SparkContext and
catalog; own SQL conf, temp views and active session), its output captured per thread, through the
``dispatch`` function the application passes in (the ``tidewater`` CLI's own). A client that goes
away (killed, timed out) does not stop its command: it runs to completion, its remaining output
goes to this log. SIGTERM stops accepting, waits for running commands (60 s), stops Spark.
"""

from __future__ import annotations

import hmac
import itertools
import json
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from infra.job_service import TOKEN_HEADER
from infra.job_service.capture import capture, install, run_command
from infra.services.process import wait_until
from infra.spark_session import bound_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakehouse.config import TidewaterConfig

PING_SECONDS = 10.0
MAX_PARALLEL = 4  # commands at once; more wait (Airflow runs 2 tasks at a time)


class _Job:
    def __init__(self, number: int, argv: list[str]) -> None:
        self.number, self.argv = number, argv
        self.lines: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.attached = True

    def sink(self, stream: str, text: str) -> None:
        if self.attached:
            self.lines.put((stream, text))
        else:  # the client is gone: keep the output in the service log
            print(f"[job {self.number} {stream}] {text}", end="" if text.endswith("\n") else "\n", flush=True)

    def detach(self) -> None:
        self.attached = False
        while not self.lines.empty():
            stream, data = self.lines.get()
            if stream in ("out", "err"):
                self.sink(stream, data)


class JobService:
    """Runs commands in threads on ``newSession()``s of ``spark``; counts them for ``/health``."""

    def __init__(self, spark: SparkSession, dispatch: Callable[[list[str]], int], token: str, fingerprint: str) -> None:
        self.spark, self.dispatch, self.token, self.fingerprint = spark, dispatch, token, fingerprint
        self.running = self.served = 0
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(MAX_PARALLEL)

    def health(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "fingerprint": self.fingerprint, "running": self.running,
                "served": self.served, "spark": self.spark.version}

    def submit(self, argv: list[str]) -> _Job:
        job = _Job(next(self._numbers), argv)
        threading.Thread(target=self._run, args=(job,), name=f"job-{job.number}").start()
        return job

    def _run(self, job: _Job) -> None:
        started, code = time.monotonic(), 1
        with self._slots:
            with self._lock:
                self.running += 1
            try:
                with capture(job.sink):
                    code = run_command(self._in_new_session, job.argv)
            finally:
                with self._lock:
                    self.running -= 1
                    self.served += 1
                    idle = self.running == 0
                if idle:  # a command's forgotten persist() must not fill the long-lived driver
                    self.spark.catalog.clearCache()
                job.lines.put(("exit", code))
                print(f"job {job.number}: tidewater {' '.join(job.argv)} -> exit {code} in "
                      f"{time.monotonic() - started:.1f}s", flush=True)

    def _in_new_session(self, argv: list[str]) -> int:
        with bound_session(self.spark.newSession()):
            return self.dispatch(argv)

    def wait_idle(self, timeout: float) -> bool:
        return wait_until(lambda: not self.running, timeout, 0.2)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    service: JobService


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # one line per command is logged by JobService

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        given = self.headers.get(TOKEN_HEADER, "")
        if hmac.compare_digest(given.encode(), self.server.service.token.encode()):
            return True
        self._reply(401, {"error": "wrong or missing token"})
        return False

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self._authorized():
            if self.path == "/health":
                self._reply(200, self.server.service.health())
            else:
                self._reply(404, {"error": f"no such path {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._authorized():
            return
        service = self.server.service
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            argv = body["argv"]
            if self.path != "/run" or not all(isinstance(a, str) for a in argv):
                raise ValueError(argv)
        except (ValueError, KeyError, TypeError):
            return self._reply(400, {"error": "expected POST /run with {'argv': [str, ...], 'fingerprint': str}"})
        if body.get("fingerprint") != service.fingerprint:
            return self._reply(409, {"error": "another configuration or code", "fingerprint": service.fingerprint})
        job = service.submit(argv)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            self._stream(job)
        except OSError:  # the client went away: the command runs on
            job.detach()

    def _stream(self, job: _Job) -> None:
        while True:
            try:
                stream, data = job.lines.get(timeout=PING_SECONDS)
            except queue.Empty:
                stream, data = "ping", None
            self.wfile.write(json.dumps({stream: data}).encode() + b"\n")
            self.wfile.flush()
            if stream == "exit":
                return


def serve(cfg: TidewaterConfig, spark: SparkSession, dispatch: Callable[[list[str]], int],
          token: str, fingerprint: str) -> int:
    """Serve until SIGTERM/SIGINT; then finish running commands and stop Spark."""
    install()
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: stopping.append(signum))
    server = _Server((cfg.job_service.host, cfg.job_service.port), _Handler)
    server.service = JobService(spark, dispatch, token, fingerprint)
    threading.Thread(target=server.serve_forever, name="job-service-http", daemon=True).start()
    print(f"job service: pid {os.getpid()} on http://{cfg.job_service.host}:{cfg.job_service.port}, "
          f"Spark {spark.version}", flush=True)
    while not stopping:
        time.sleep(0.5)
    print(f"job service: stopping; {server.service.running} command(s) running", flush=True)
    server.shutdown()
    server.service.wait_idle(60)
    time.sleep(0.5)  # the handlers send the last exit lines
    spark.stop()
    return 0
