"""Build the class-data-sharing archives that Spark driver JVMs map (``infra.class_data_archive``).

``tidewater setup`` runs ``build()``: on a throwaway stack (temp folder, Derby metastore, Kafka
broker) one driver JVM runs what Tidewater's drivers run at start (session with the Hive catalog,
Delta DDL, append, MERGE and read, a Kafka batch read, a micro-batch of a Kafka stream through
``foreachBatch``) and writes the classes it loaded at exit; then the Thrift server starts, answers
one JDBC query and stops, writing its own. Each archive is written to a temp name and renamed into
place, so two setups at once never leave a torn file. An archive that exists is kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from infra.class_data_archive import ARCHIVE_DIR, DUMP_ENV, archive_file
from infra.jvm import require_java
from infra.services import thrift_access, thrift_server
from infra.services.thrift_server import driver_class_path
from infra.spark_session import session_conf
from lakehouse.config import load_config
from spark_jobs.io.kafka_admin import ensure_topic
from tidewater.isolated_stack import isolated_env, running_stack

PROBE_TOPIC = "tidewater-cds-probe"


def _targets(cfg: Any) -> dict[str, Path]:
    class_path = driver_class_path(session_conf(cfg, "cds")).split(os.pathsep)  # what session_conf fingerprints
    return {role: archive_file(role, require_java(), class_path) for role in ("driver", "thrift")}


def _dumped(tmp: Path, target: Path) -> bool:
    if not tmp.is_file() or tmp.stat().st_size < 1_000_000:
        tmp.unlink(missing_ok=True)
        return False
    os.replace(tmp, target)
    return True


def _start_thrift(cfg: Any, tmp: Path) -> None:
    os.environ[DUMP_ENV] = str(tmp)  # read when the server's command line is built
    try:
        thrift_server.start(cfg)
    finally:
        os.environ.pop(DUMP_ENV, None)


def _query_thrift(cfg: Any) -> None:
    conn = thrift_access.connect(cfg, thrift_access.ADMIN_USER)  # the probe table is in default: not the BI user's
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM default.cds_probe")
    cur.fetchall()
    conn.close()


def build(force: bool = False) -> list[str]:
    """Build the missing archives; returns one line per archive (built, kept, or why not)."""
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
    """The driver probe always runs: the Thrift probe's query reads the table it makes. The Thrift server
    starts while the driver probe runs (the two JVMs' starts overlap; on 2 cores setup took 115 s one after
    the other), and answers its query once the probe is done."""
    lines: list[str] = []
    ensure_topic(cfg, PROBE_TOPIC)
    started, tmp = time.monotonic(), targets["driver"].with_suffix(f".{os.getpid()}.tmp")
    thrift_tmp = targets["thrift"].with_suffix(f".{os.getpid()}.tmp")
    env = {**os.environ, **({DUMP_ENV: str(tmp)} if "driver" in todo else {})}
    probe = subprocess.Popen([sys.executable, "-m", "tidewater.class_data_archive_probe", PROBE_TOPIC], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    thrift_error: Exception | None = None  # raised once the driver's archive is kept
    try:
        if "thrift" in todo:
            try:
                _start_thrift(cfg, thrift_tmp)
            except Exception as exc:  # noqa: BLE001 - re-raised below, after the driver probe
                thrift_error = exc
        _, stderr = probe.communicate(timeout=600)
        probe_seconds = time.monotonic() - started
        if probe.returncode == 0 and "thrift" in todo and thrift_error is None:
            _query_thrift(cfg)
    finally:
        if probe.poll() is None:
            probe.kill()
            probe.wait()
        if "thrift" in todo:
            thrift_server.stop(cfg)
    if probe.returncode != 0:
        tmp.unlink(missing_ok=True)
        thrift_tmp.unlink(missing_ok=True)
        last = (stderr.strip().splitlines() or [""])[-1][:200]
        return [f"jvm archive: the driver probe failed (exit {probe.returncode}: {last}); Spark drivers start "
                "without an archive, only slower"]
    if thrift_error is not None:
        thrift_tmp.unlink(missing_ok=True)
        todo = {role: path for role, path in todo.items() if role != "thrift"}
    for role, seconds in (("driver", probe_seconds), ("thrift", time.monotonic() - started)):
        if role in todo:
            ok = _dumped(tmp if role == "driver" else thrift_tmp, targets[role])
            lines.append(f"jvm archive: {targets[role].name} {'built' if ok else 'NOT written'} in {seconds:.0f}s")
    if thrift_error is not None:
        print("\n".join(lines))
        raise thrift_error
    return lines
