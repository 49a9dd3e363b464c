"""What a stream's small Delta append costs as its ``_delta_log`` folder fills up.

Every micro-batch of the speed job appends to bronze, the partials table and ``ops.stream_progress``:
one commit each, and each commit writes a JSON file and a ``.crc`` file into the table's
``_delta_log``. Delta deletes log files only after a checkpoint, and only those older than
``delta.logRetentionDuration`` (30 days unless set) truncated to midnight. Before each commit Delta
lists the log folder to find the latest version, and on a local or HDFS-like file system that lists
the WHOLE folder (``HadoopFileSystemLogStore.listFrom``), so the listing grows with every commit kept.

This benchmark measures the speed job's own write path (``delta_io.tagged_append``, by location) on
a table with the streamed tables' properties, at several log folder sizes. The extra files are inert
names that sort before version 1 (``00000000000000000000.pad-N``): Delta lists and skips them just as
it lists and skips the commits before the last checkpoint. At 1,000 events/s a micro-batch of about
3.6 s (this machine) is 24,000 commits, 48,000 log files, per table and day.

Run: ``python -m benchmarks.delta_log_growth [--files 0,10000,50000] [--appends 10]``; writes
``results/<time>-delta_log_growth.json`` (git commit and machine facts included).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness import git_facts, machine_facts, save_json_result
from benchmarks.stack import isolated_stack
from infra.spark_session import get_spark
from lakehouse.contracts import STREAMED
from spark_jobs.io.delta_io import table_log_dir, tagged_append
from spark_jobs.speed import execution_mode

PAD = "00000000000000000000.pad-"


def pad_to(log_dir: Path, files: int) -> int:
    """Make the inert files of ``log_dir`` exactly ``files``; returns how many files the folder holds."""
    pads = sorted(log_dir.glob(f"{PAD}*"))
    for extra in pads[files:]:
        extra.unlink()
    for n in range(len(pads), files):
        (log_dir / f"{PAD}{n:08d}").touch()
    return sum(1 for _ in log_dir.iterdir())


def measure(spark: Any, table: str, log_dir: Path, sizes: list[int], appends: int) -> list[dict[str, Any]]:
    rows = spark.range(500).selectExpr("id", "cast(id AS DOUBLE) AS v")
    for n in range(3):  # a warm JVM, as a running speed job's
        tagged_append(rows, table, f"warm/{n}")
    out = []
    for files in sizes:
        in_folder = pad_to(log_dir, files)
        started = time.monotonic()
        for n in range(appends):
            tagged_append(rows, table, f"measure/{files}/{n}")
        seconds = (time.monotonic() - started) / appends
        out.append({"inert_files": files, "files_in_log_folder": in_folder, "seconds_per_append": round(seconds, 3)})
        print(f"delta_log_growth: {in_folder} files in _delta_log: {seconds:.3f} s per append", flush=True)
    pad_to(log_dir, 0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.delta_log_growth")
    ap.add_argument("--files", default="0,10000,50000,0", help="inert files in _delta_log per step, in order")
    ap.add_argument("--appends", type=int, default=10, help="500-row appends timed per step")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.files.split(",")]

    result: dict[str, Any] = {"benchmark": "delta_log_growth", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                              "git": git_facts(), "machine": machine_facts(), "rows_per_append": 500,
                              "table_properties": dict(STREAMED)}
    with isolated_stack() as cfg:
        spark = get_spark(cfg, "tidewater-bench-delta-log")
        execution_mode.use_for(spark, 500, cfg.spark.interpreted_max_records)  # as a level micro-batch runs
        table = "bronze.delta_log_growth"
        props = ", ".join(f"'{k}' = '{v}'" for k, v in STREAMED)
        spark.sql(f"CREATE TABLE {table} (id BIGINT, v DOUBLE) USING delta TBLPROPERTIES ({props})")
        log_dir = table_log_dir(spark, table)
        assert log_dir is not None, f"{table} has no local log folder"
        try:
            result["steps"] = measure(spark, table, log_dir, sizes, args.appends)
        finally:
            spark.stop()
    save_json_result(result, "delta_log_growth")
    return 0


if __name__ == "__main__":
    sys.exit(main())
