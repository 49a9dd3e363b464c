"""Scratch folders of the Spark driver JVMs Tidewater starts, so that a killed JVM leaves nothing in /tmp.

A driver JVM writes Spark's ``spark-*`` and ``blockmgr-*`` folders (shuffle files, and in local mode
the executor's copy of every jar in ``spark.jars``), ``artifacts-*`` and Hive's ``*_resources`` under
its temp dir. Spark deletes them at an orderly exit; a JVM killed with SIGKILL (the crash tests, a
chaos soak, an operator's ``kill -9``) leaves them in /tmp: 2 GB after a day of test runs.

Each driver gets a folder of its own under ``<data_dir>/jvm-scratch``, named after the process whose
life bounds the JVM's: ``pid-<n>`` for a PySpark driver (its JVM exits when the Python process that
launched it does), ``thrift`` for the one Thrift server of a data folder (cleared when it starts). A
new PySpark driver removes the ``pid-*`` folders of processes that no longer run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from infra.services.proc_facts import pid_alive
from lakehouse import naming
from lakehouse.config import TidewaterConfig

THRIFT_OWNER = "thrift"


def stale_folders(names: list[str], alive: set[int]) -> list[str]:
    """The ``pid-<n>`` names among ``names`` whose process is not in ``alive`` (pure)."""
    out = []
    for name in names:
        prefix, _, number = name.partition("-")
        if prefix == "pid" and number.isdigit() and int(number) not in alive:
            out.append(name)
    return out


def sweep(cfg: TidewaterConfig) -> list[Path]:
    """Remove the scratch folders of PySpark drivers whose process is gone; returns them."""
    root = naming.jvm_scratch_dir(cfg)
    names = [p.name for p in root.iterdir()] if root.is_dir() else []
    pids = {int(n[4:]) for n in names if n.startswith("pid-") and n[4:].isdigit()}
    gone = [root / name for name in stale_folders(names, {pid for pid in pids if pid_alive(pid)})]
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return gone


def scratch_folder(cfg: TidewaterConfig, owner: str, fresh: bool = False) -> Path:
    """The scratch folder of ``owner`` (``pid-<n>`` or ``thrift``), created; ``fresh``: emptied first."""
    folder = naming.jvm_scratch_dir(cfg) / owner
    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def scratch_settings(folder: Path, java_options: str) -> dict[str, str]:
    """Spark settings that put a driver's scratch files in ``folder``: its local dir, and the JVM's temp
    dir appended to ``java_options`` (the driver's ``extraJavaOptions``; quoted, Spark splits it on spaces)."""
    return {"spark.local.dir": str(folder),
            "spark.driver.extraJavaOptions": f"{java_options} \"-Djava.io.tmpdir={folder}\"".strip()}
