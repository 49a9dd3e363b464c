"""Build the class-data-sharing archives that Spark driver JVMs map (``infra.jvm_archive``).

``tidewater setup`` runs ``build()``: on a throwaway stack (temp folder, Derby metastore, Kafka
broker) one driver JVM runs what Tidewater's drivers run at start (session with the Hive catalog,
Delta DDL, append, MERGE and read, a Kafka batch read, a micro-batch of a Kafka stream through
``foreachBatch``) and writes the classes it loaded at exit; meanwhile (the two are single-threaded
JVM starts for the most part, so on 2 cores side by side they take little more than the longer one)
the Thrift server starts, makes and reads a Delta table over JDBC and stops, writing its own. Each
archive is written to a temp name and renamed into place, so two setups at once never leave a torn
file. An archive that exists is kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PROBE_TOPIC = "tidewater-cds-probe"


def _targets(cfg: Any) -> dict[str, Path]:
    from infra.jvm import require_java
    from infra.jvm_archive import archive_file
    from infra.services.thrift_server import driver_class_path
    from infra.spark_session import session_conf

    class_path = driver_class_path(session_conf(cfg, "cds")).split(os.pathsep)  # what session_conf fingerprints
    return {role: archive_file(role, require_java(), class_path) for role in ("driver", "thrift")}


def _dumped(tmp: Path, target: Path) -> bool:
    if not tmp.is_file() or tmp.stat().st_size < 1_000_000:
        tmp.unlink(missing_ok=True)
        return False
    os.replace(tmp, target)
    return True


def _thrift(cfg: Any, tmp: Path) -> None:
    from pyhive import hive

    from infra.jvm_archive import DUMP_ENV
    from infra.services import thrift_server

    os.environ[DUMP_ENV] = str(tmp)  # read when the server's command line is built
    try:
        thrift_server.start(cfg)
    finally:
        os.environ.pop(DUMP_ENV, None)
    try:
        conn = hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, auth="NOSASL")
        cur = conn.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS default.cds_thrift_probe USING delta AS SELECT 'a' AS k, 1L AS n")
        cur.execute("SELECT k, count(*) FROM default.cds_thrift_probe GROUP BY k")
        cur.fetchall()
        conn.close()
    finally:
        thrift_server.stop(cfg)


def build(force: bool = False) -> list[str]:
    """Build the missing archives; returns one line per archive (built, kept, or why not)."""
    from infra.jvm_archive import ARCHIVE_DIR
    from lakehouse.config import load_config
    from tidewater.isolated_stack import isolated_env, running_stack

    with isolated_env("tidewater-cds-"):
        targets = _targets(load_config())
        todo = {role: path for role, path in targets.items() if force or not path.is_file()}
        lines = [f"jvm archive: {path.name} kept" for role, path in targets.items() if role not in todo]
        if not todo:
            return lines
        ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
        with running_stack(load_config()) as cfg:
            lines += _build(cfg, targets, todo)
    return lines


def _build(cfg: Any, targets: dict[str, Path], todo: dict[str, Path]) -> list[str]:
    """The driver probe (a subprocess) and the Thrift server's probe side by side."""
    from spark_jobs.io.kafka_admin import ensure_topic

    lines: list[str] = []
    ensure_topic(cfg, PROBE_TOPIC)
    driver = _DriverProbe(targets["driver"]) if "driver" in todo else None
    try:
        if "thrift" in todo:
            started, tmp = time.monotonic(), targets["thrift"].with_suffix(f".{os.getpid()}.tmp")
            _thrift(cfg, tmp)
            ok = _dumped(tmp, targets["thrift"])
            lines.append(f"jvm archive: {targets['thrift'].name} {'built' if ok else 'NOT written'} "
                         f"in {time.monotonic() - started:.0f}s")
    finally:
        if driver is not None:
            lines.insert(0, driver.finish())
    return lines


class _DriverProbe:
    """``tidewater.jvm_archive_probe`` in a subprocess whose JVM writes the driver archive at its exit.
    The probe is done when its stderr pipe closes, not when the Python process exits: the JVM child
    holds the pipe too, and writes the archive after its parent is gone."""

    def __init__(self, target: Path) -> None:
        from infra.jvm_archive import DUMP_ENV

        self.target, self.started = target, time.monotonic()
        self.tmp = target.with_suffix(f".{os.getpid()}.tmp")
        self.proc = subprocess.Popen([sys.executable, "-m", "tidewater.jvm_archive_probe", PROBE_TOPIC],
                                     env={**os.environ, DUMP_ENV: str(self.tmp)}, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        self.reader = threading.Thread(target=lambda: self.stderr.append(self.proc.communicate()[1]), daemon=True)
        self.reader.start()

    def finish(self) -> str:
        self.reader.join(max(1.0, 600 - (time.monotonic() - self.started)))
        if self.reader.is_alive():
            self.proc.kill()
            self.reader.join(60)
        if self.proc.returncode != 0:
            self.tmp.unlink(missing_ok=True)
            last = ("".join(self.stderr).strip().splitlines() or [""])[-1][:200]
            return (f"jvm archive: the driver probe failed (exit {self.proc.returncode}: {last}); Spark drivers "
                    "start without an archive, only slower")
        ok = _dumped(self.tmp, self.target)
        return f"jvm archive: {self.target.name} {'built' if ok else 'NOT written'} in {time.monotonic() - self.started:.0f}s"
