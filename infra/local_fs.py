"""Hadoop's local file system without a ``chmod``/``readlink`` process per file (infra/java/io/tidewater/hadoop).

Without Hadoop's native library, which pyspark does not ship, ``RawLocalFileSystem`` starts a ``chmod``
after creating each file or folder and a ``readlink`` for each ``getFileLinkStatus`` (every checkpoint
commit's rename): 46 processes per micro-batch of a speed job at 1,000 events/s. Tidewater's
classes do both through ``java.nio``; they are Hadoop's own otherwise. Only a local master uses them:
the jar is on this machine's driver class path, which a cluster's executors do not have.
"""

from __future__ import annotations

from pathlib import Path

from infra.jars import build_tidewater_jar

FILE_SYSTEM = "io.tidewater.hadoop.NoForkLocalFileSystem"  # FileSystem API (Parquet files, Delta reads)
FILE_CONTEXT = "io.tidewater.hadoop.NoForkLocalFs"  # FileContext API (checkpoints, Delta's log)
PACKAGE = "io.tidewater.hadoop"  # shared with Hive's isolated metastore client (thrift_server)


def uses_no_fork_fs(master: str) -> bool:
    return master.startswith("local")


def no_fork_settings(master: str) -> tuple[list[Path], dict[str, str]]:
    """The driver class-path entries and Spark settings that put ``file:`` paths on Tidewater's classes;
    none for a cluster master."""
    if not uses_no_fork_fs(master):
        return [], {}

    return [build_tidewater_jar()], {"spark.hadoop.fs.file.impl": FILE_SYSTEM,
                                     "spark.hadoop.fs.AbstractFileSystem.file.impl": FILE_CONTEXT}
