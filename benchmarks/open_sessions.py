"""What showing open sessions costs the session speed query: ``open_sessions`` (a Python ``transformWithState``
step that emits every change) against Spark's ``session_window`` in ``append`` mode (JVM, closed sessions only).

The same events (``--events`` over ``--users`` users, 90 s apart per user on average, so sessions open,
extend, merge and close) are written once as Parquet files; each variant streams them through the speed
query's own steps (watermark, ``dropDuplicatesWithinWatermark``, then the variant) with one file per
micro-batch, into a ``foreachBatch`` that counts the rows, on ``local[2]``. Variants alternate
(``--rounds``), so a load from elsewhere on the machine falls on both.

Run: ``python -m benchmarks.open_sessions [--events 200000] [--users 2000] [--files 10] [--rounds 2]``; writes
``results/<time>-open_sessions.md`` (git commit included).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import save_markdown_table
from lakehouse.pipeline import load_pipeline
from spark_jobs.speed.open_sessions import open_sessions
from spark_jobs.transforms.windows import windowed_aggregate, with_watermark_dedup


def write_events(spark: Any, folder: Path, events: int, users: int, files: int) -> None:
    rng = random.Random(67)
    t0, clock = 1_800_000_000_000, {u: 0 for u in range(users)}
    rows = []
    for n in range(events):
        user = rng.randrange(users)
        clock[user] += int(rng.expovariate(1 / 90_000))  # 90 s apart on average: some gaps close a session
        rows.append((f"e{n}", f"u{user}", t0 + clock[user], "move", rng.randrange(10)))
    rows.sort(key=lambda r: r[2])
    per = -(-events // files)
    schema = "event_id string, user_id string, timestamp long, action string, points int"
    for i in range(files):
        spark.createDataFrame(rows[i * per:(i + 1) * per], schema).coalesce(1).write.parquet(str(folder / f"part{i:03d}"))


def run_variant(spark: Any, name: str, source: Path, work: Path) -> tuple[float, int]:
    from pyspark.sql import functions as F

    p = load_pipeline("game_sessions")
    schema = "event_id string, user_id string, timestamp long, action string, points int"
    events = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source / "part*"))
              .withColumn("event_time", F.timestamp_millis("timestamp")).transform(with_watermark_dedup(p)))
    out = events.transform(open_sessions(p) if name == "open_sessions" else windowed_aggregate(p, streaming=True))
    rows = [0]

    def count(df: Any, batch_id: int) -> None:
        rows[0] += df.count()

    checkpoint = work / f"ck-{name}-{time.monotonic_ns()}"
    started = time.monotonic()
    query = (out.writeStream.outputMode("update" if name == "open_sessions" else "append").foreachBatch(count)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    return time.monotonic() - started, rows[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.open_sessions")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
             .config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider").getOrCreate())
    work = Path(tempfile.mkdtemp(prefix="tidewater-open-sessions-"))
    try:
        write_events(spark, work / "events", args.events, args.users, args.files)
        lines = []
        for r in range(args.rounds):
            for name in ("session_window", "open_sessions"):
                seconds, rows = run_variant(spark, name, work / "events", work)
                lines.append(f"| {r + 1} | {name} | {seconds:.1f} | {args.events / seconds:,.0f} | {rows:,} |")
                print(lines[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save_markdown_table("open_sessions", "open_sessions against session_window",
                        f"{args.events:,} events, {args.users:,} users, {args.files} micro-batches, local[2], 2 shuffle partitions",
                        ["round", "variant", "seconds", "events/s", "rows out"], lines)


if __name__ == "__main__":
    main()
