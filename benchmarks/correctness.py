"""The end checks of a Lambda run, shared by the integration tests and the soak (benchmarks/soak.py).

* ``offset_problems``: every Kafka offset of every partition is in ``bronze.<p>`` or ``quarantine.<p>``
  exactly once (per partition: first to last offset of the topic, as many rows as distinct offsets,
  no gap, none twice).
* ``serving_rows`` / ``serving_differences``: ``serving.<p>`` window by window against the plain-Python
  oracle of ``benchmarks/stream_oracle.py``.

Both take ``query``, any function from SQL text to rows (tuples): a Spark session's
``spark.sql(q).collect()`` in the tests, a JDBC cursor on the Thrift server in the soak.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.stream_oracle import Expected
from lakehouse.config import TidewaterConfig
from lakehouse.contracts import DOUBLE_TOLERANCE
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_admin import offsets

Query = Callable[[str], Sequence[Sequence[Any]]]


def offset_problems(query: Query, cfg: TidewaterConfig, pipeline: str, topic: str) -> list[str]:
    """What breaks "every offset of the topic exactly once in bronze or quarantine" ([] when nothing)."""
    rows = query(f"SELECT kafka_partition, min(kafka_offset), max(kafka_offset), count(*), count(DISTINCT kafka_offset) "
                 f"FROM (SELECT kafka_partition, kafka_offset FROM bronze.{pipeline} UNION ALL "
                 f"SELECT kafka_partition, kafka_offset FROM quarantine.{pipeline}) GROUP BY kafka_partition")
    stored = {int(r[0]): (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows}
    in_kafka = {part: (begin, end) for part, (begin, end) in offsets(cfg, topic).items() if end > begin}
    out = []
    spans = {part: (lo, hi + 1) for part, (lo, hi, _, _) in stored.items()}
    if spans != in_kafka:
        out.append(f"bronze + quarantine span {spans} per partition, Kafka holds {in_kafka}")
    wrong = {part: s for part, s in stored.items() if not s[2] == s[3] == s[1] - s[0] + 1}
    if wrong:
        out.append(f"offsets missing or twice, (first, last, rows, distinct) per partition: {wrong}")
    return out


def serving_rows(query: Query, p: Pipeline) -> dict[tuple[Any, ...], dict[str, Any]]:
    """``serving.<p>`` by grain (keys, window start ms, window end ms); a grain twice raises."""
    names = [*p.keys, *(a.name for a in p.aggregates), "source", "finality"]
    rows = query(f"SELECT {', '.join(names)}, unix_millis(window_start), unix_millis(window_end), "
                 f"unix_millis(max_event_time) FROM serving.{p.name}")
    got: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        row = dict(zip([*names, "_ws", "_we", "_mx"], r, strict=True))
        key = (*(row[k] for k in p.keys), row["_ws"], row["_we"])
        if key in got:
            raise AssertionError(f"serving.{p.name}: window {key} twice")
        got[key] = row
    return got


def serving_differences(p: Pipeline, exp: Expected, got: dict[tuple[Any, ...], dict[str, Any]]) -> list[str]:
    """Every way ``got`` (``serving_rows``) differs from the oracle's rows ([] when equal)."""
    out = [f"missing {k}: {exp.rows[k]}" for k in sorted(set(exp.rows) - set(got), key=str)]
    out += [f"unexpected {k}: {got[k]}" for k in sorted(set(got) - set(exp.rows), key=str)]
    for key in sorted(set(exp.rows) & set(got), key=str):
        want, row = exp.rows[key], got[key]
        for a in [*(a.name for a in p.aggregates), "max_event_time", "source"]:
            value = row["_mx" if a == "max_event_time" else a]
            ok = (abs(value - want[a]) <= DOUBLE_TOLERANCE * max(1.0, abs(want[a])) if isinstance(want[a], float)
                  else value == want[a])
            if not ok:
                out.append(f"{key} {a}: serving {value!r}, oracle {want[a]!r} ({row['source']}, {row['finality']})")
        if (row["source"] == "speed") != (row["finality"] == "provisional"):
            out.append(f"{key}: source {row['source']} with finality {row['finality']}")
    return out


def spark_query(spark: Any) -> Query:
    """``query`` for a Spark session."""
    return lambda sql: [tuple(r) for r in spark.sql(sql).collect()]
