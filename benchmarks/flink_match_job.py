"""Scenario 9 peer: a sequence alert (``first`` then ``then`` per key within a time) as Flink SQL
``MATCH_RECOGNIZE``, run by PyFlink in benchmarks/.venv-flink.

Kafka source (JSON, event time from ``timestamp`` ms, watermark ``--watermark-ms``), from ``--from`` (default the
earliest offsets) and bounded at ``--until``, so the job ends when it has read them. Per ``--key`` in event
time: ``PATTERN (FIRST_EVENT OTHER* THEN_EVENT) WITHIN <within>``, where ``OTHER`` is any event that does not
match the closing condition, with ``AFTER MATCH SKIP PAST LAST ROW``: the first opening event, then the first
closing event after it, and the next search starts after that closing event (Tidewater's ``sequence``).

* ``--sink DIR``: ``INSERT INTO`` a filesystem sink (JSON lines, one row per match), checkpointing on
  (EXACTLY_ONCE, every ``--checkpoint-s``), as scenario 6's job. Prints one JSON line
  ``{"seconds": s, "files": n, "uncommitted": n, "matches": n}``; ``seconds`` runs from submission to the
  end of the bounded job (``TableResult.wait()``).
* ``--collect``: the matches through ``TableResult.collect()``, no checkpointing (results are handed over
  as soon as they exist): prints ``{"submitted": true}`` once the job is submitted, then one line per match,
  ``{"match": [key, first_id, then_id, first_ms, then_ms], "at": <epoch s when the client received it>}``.

A condition is ``field,op,value`` (op one of ``== != < <= > >=``). Run:
``benchmarks/.venv-flink/bin/python benchmarks/flink_match_job.py --bootstrap H:P --topic T --jar J
--until 'partition:0,offset:N;...' --key sensor_id --first 'temperature,>,35' --then 'temperature,<,20'
--within-ms 600000 --watermark-ms 120000 (--sink DIR --checkpoints DIR | --collect)``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

SQL_OPS = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

SOURCE = """CREATE TABLE readings (
  {columns},
  event_time AS TO_TIMESTAMP_LTZ(`timestamp`, 3),
  WATERMARK FOR event_time AS event_time - {watermark}
) WITH (
  'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
  'properties.group.id' = 'bench-flink-match', {startup},
  'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = '{until}',
  'format' = 'json', 'json.ignore-parse-errors' = 'false'
)"""

SINK = """CREATE TABLE alert_matches (
  match_key STRING, first_id STRING, then_id STRING, first_ms BIGINT, then_ms BIGINT
) WITH (
  'connector' = 'filesystem', 'path' = '{path}', 'format' = 'json',
  'sink.rolling-policy.rollover-interval' = '{interval} s', 'sink.rolling-policy.check-interval' = '1 s'
)"""

MATCH = """SELECT {key} AS match_key, first_id, then_id, first_ms, then_ms
FROM readings MATCH_RECOGNIZE (
  PARTITION BY {key} ORDER BY event_time
  MEASURES FIRST_EVENT.event_id AS first_id, THEN_EVENT.event_id AS then_id,
    FIRST_EVENT.`timestamp` AS first_ms, THEN_EVENT.`timestamp` AS then_ms
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (FIRST_EVENT OTHER* THEN_EVENT) WITHIN {within}
  DEFINE FIRST_EVENT AS {first}, OTHER AS NOT ({other}), THEN_EVENT AS {then}
)"""


def interval(ms: int) -> str:
    """A Flink SQL day-time interval literal of ``ms`` milliseconds."""
    if ms <= 0:
        raise ValueError(f"an interval must be positive, not {ms} ms")
    if ms % 60_000 == 0 and ms // 60_000 < 100:
        return f"INTERVAL '{ms // 60_000}' MINUTE"
    if ms % 1000 == 0 and ms // 1000 < 100:
        return f"INTERVAL '{ms // 1000}' SECOND"
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"INTERVAL '{days} {hours:02d}:{minutes:02d}:{rest / 1000:06.3f}' DAY TO SECOND(3)"


def condition(text: str, variable: str) -> str:
    """``field,op,value`` -> ``VARIABLE.`field` op value`` (a string value quoted)."""
    field, op, value = text.split(",", 2)
    if op not in SQL_OPS:
        raise ValueError(f"condition {text!r}: op must be one of {' '.join(SQL_OPS)}")
    try:
        literal = repr(float(value)) if "." in value or "e" in value.lower() else str(int(value))
    except ValueError:
        literal = "'" + value.replace("'", "''") + "'"
    return f"{variable}.`{field}` {SQL_OPS[op]} {literal}"


def match_sql(key: str, first: str, then: str, within_ms: int) -> str:
    return MATCH.format(key=key, first=condition(first, "FIRST_EVENT"), then=condition(then, "THEN_EVENT"),
                        other=condition(then, "OTHER"), within=interval(within_ms))


def source_sql(topic: str, bootstrap: str, key: str, fields: dict[str, str], watermark_ms: int, until: str,
               start: str | None) -> str:
    startup = ("'scan.startup.mode' = 'specific-offsets', "
               f"'scan.startup.specific-offsets' = '{start}'" if start else "'scan.startup.mode' = 'earliest-offset'")
    columns = {"event_id": "STRING", key: "STRING", "timestamp": "BIGINT", **fields}
    return SOURCE.format(topic=topic, bootstrap=bootstrap, columns=", ".join(f"`{n}` {t}" for n, t in columns.items()),
                         watermark=interval(watermark_ms), until=until, startup=startup)


def read_matches(sink: Path) -> tuple[list[tuple[str, str, str, int, int]], int, int]:
    """(matches, committed files, uncommitted files) of a sink folder; hidden or in-progress files are
    counted, not read."""
    files = [f for f in sorted(sink.rglob("*")) if f.is_file()]
    committed = [f for f in files if not f.name.startswith((".", "_")) and "inprogress" not in f.name]
    out = []
    for f in committed:
        for line in f.read_text().splitlines():
            m = json.loads(line)
            out.append((m["match_key"], m["first_id"], m["then_id"], int(m["first_ms"]), int(m["then_ms"])))
    return out, len(committed), len(files) - len(committed)


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--bootstrap", "--topic", "--jar", "--until", "--key", "--first", "--then"):
        ap.add_argument(name, required=True)
    ap.add_argument("--from", dest="start", help="start offsets, as --until (default: the earliest)")
    ap.add_argument("--fields", default="temperature:DOUBLE", help="other JSON fields, name:TYPE,...")
    ap.add_argument("--within-ms", type=int, required=True)
    ap.add_argument("--watermark-ms", type=int, required=True)
    ap.add_argument("--sink", type=Path, help="empty directory for the matches' JSON files")
    ap.add_argument("--checkpoints", type=Path, help="checkpoint directory (with --sink)")
    ap.add_argument("--checkpoint-s", type=int, default=3)
    ap.add_argument("--collect", action="store_true", help="print each match as the client receives it")
    ap.add_argument("--parallelism", type=int, default=2)
    args = ap.parse_args()
    if bool(args.sink) == args.collect or (args.sink and not args.checkpoints):
        raise SystemExit("flink_match_job: give either --sink DIR --checkpoints DIR, or --collect")

    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    settings = {"pipeline.jars": f"file://{args.jar}", "parallelism.default": str(args.parallelism),
                "table.local-time-zone": "UTC", "taskmanager.memory.process.size": "2g"}
    if args.sink:
        settings.update({"execution.checkpointing.interval": f"{args.checkpoint_s} s",
                         "execution.checkpointing.mode": "EXACTLY_ONCE",
                         "execution.checkpointing.dir": args.checkpoints.resolve().as_uri()})
    for key, value in settings.items():
        env.get_config().set(key, value)
    fields = dict(part.split(":", 1) for part in args.fields.split(","))
    env.execute_sql(source_sql(args.topic, args.bootstrap, args.key, fields, args.watermark_ms, args.until, args.start))
    query = match_sql(args.key, args.first, args.then, args.within_ms)
    if args.collect:
        result = env.execute_sql(query)
        print(json.dumps({"submitted": True}), flush=True)
        with result.collect() as rows:
            for row in rows:
                print(json.dumps({"match": [row[0], row[1], row[2], row[3], row[4]], "at": time.time()}), flush=True)
        return
    sink = args.sink.resolve()
    if sink.exists() and any(sink.iterdir()):
        raise SystemExit(f"flink_match_job: sink directory {sink} is not empty")
    env.execute_sql(SINK.format(path=sink.as_uri(), interval=args.checkpoint_s))
    started = time.monotonic()
    env.execute_sql(f"INSERT INTO alert_matches {query}").wait()
    seconds = time.monotonic() - started
    matches, files, uncommitted = read_matches(sink)
    print(json.dumps({"seconds": round(seconds, 2), "files": files, "uncommitted": uncommitted,
                      "matches": len(matches)}), flush=True)


if __name__ == "__main__":
    main()
