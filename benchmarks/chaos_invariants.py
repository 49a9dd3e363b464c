"""The invariants the chaos sequence (``chaos_sequence``) checks after every step, each against the Kafka log itself
(``benchmarks.random_streams.read_topic``) and a plain-Python oracle (``benchmarks.stream_oracle``), never a view's text:

* every Kafka offset is in ``bronze.<p>`` or ``quarantine.<p>`` exactly once (``offset_problems``);
* no window of the active speed table counts more events than the oracle's first copies in it (session
  windows: no key counts more events over all its sessions); the speed layer may only drop late events;
* lambda mode: every batch row that ``serving.<p>`` shows (``source = 'batch'``, up to the published
  cutoff) equals the oracle over the records the topic held when that run was published;
* ``ops.stream_progress``: no micro-batch of a query lineage recorded twice, and the stateless query's
  lineages without a gap in their batch ids;
* ``late.<p>``: each late record at most once per speed version and window, behind the watermark it names,
  and in ``bronze.<p>`` at its offset (a late event still reaches the batch layer).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from benchmarks.correctness import offset_problems, serving_rows, spark_query
from benchmarks.stream_oracle import Expected, Record, expected_serving, reason_code, windows_of
from lakehouse import naming
from lakehouse.contracts import DOUBLE_TOLERANCE
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import active_version


def first_copies(p: Pipeline, records: list[Record]) -> list[dict[str, Any]]:
    """The valid events, one per event id: the copy that reached Kafka first (the documented rule)."""
    first: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
    for rec in records:
        code, event = reason_code(p, rec)
        if code is None and event is not None:
            arrival = (rec.kafka_ms, rec.partition, rec.offset)
            eid = event[p.event_id]
            if eid not in first or arrival < first[eid][0]:
                first[eid] = (arrival, event)
    return [e for _, e in first.values()]


def count_column(p: Pipeline) -> str:
    return next(a.name for a in p.aggregates if a.fn == "count")


def over_counted(spark: Any, cfg: Any, p: Pipeline, records: list[Record]) -> list[str]:
    """Windows (sessions: keys) of the active speed table that count more events than were sent."""
    table = naming.speed_table(p.name, active_version(cfg, p.name))
    spark.catalog.refreshTable(table)
    keys = ", ".join(p.keys)
    rows = spark.sql(f"SELECT {keys}, unix_millis(window_start), unix_millis(window_end), {count_column(p)} "
                     f"FROM {table}").collect()
    n = len(p.keys)
    events = first_copies(p, records)
    if p.window.type == "session":
        sent = Counter(tuple(e[k] for k in p.keys) for e in events)
        counted: Counter[tuple[Any, ...]] = Counter()
        for r in rows:
            counted[tuple(r[:n])] += int(r[n + 2])
        return [f"{table}: key {k} counts {c} events, {sent[k]} were sent" for k, c in counted.items() if c > sent[k]]
    sent = Counter((*(e[k] for k in p.keys), *w) for e in events for w in windows_of(p, e[p.event_time]))
    grains = Counter(tuple(r[: n + 2]) for r in rows)
    out = [f"{table}: window {g} held {c} times" for g, c in grains.items() if c > 1]
    out += [f"{table}: window {tuple(r[: n + 2])} counts {r[n + 2]} events, {sent[tuple(r[: n + 2])]} were sent"
            for r in rows if int(r[n + 2]) > sent[tuple(r[: n + 2])]]
    return out


def published_differences(spark: Any, p: Pipeline, at_publish: Expected) -> list[str]:
    """How the batch rows ``serving.<p>`` shows differ from the oracle at the last publish."""
    want = {k: v for k, v in at_publish.rows.items() if v["source"] == "batch"}
    got = {k: v for k, v in serving_rows(spark_query(spark), p).items() if v["source"] == "batch"}
    out = [f"serving.{p.name}: batch window {k} missing" for k in sorted(set(want) - set(got), key=str)]
    out += [f"serving.{p.name}: batch window {k} not in the oracle: {got[k]}" for k in sorted(set(got) - set(want), key=str)]
    for key in set(want) & set(got):
        for a in p.aggregates:
            value, expected = got[key][a.name], want[key][a.name]
            same = (abs(value - expected) <= DOUBLE_TOLERANCE * max(1.0, abs(expected)) if isinstance(expected, float)
                    else value == expected)
            if not same:
                out.append(f"serving.{p.name}: batch window {key} {a.name} = {value!r}, oracle {expected!r}")
    return out


def progress_problems(spark: Any, p: Pipeline, stateless: bool) -> list[str]:
    """``ops.stream_progress`` rows recorded twice per lineage, and (stateless query) gaps in a lineage."""
    spark.catalog.refreshTable("ops.stream_progress")
    rows = spark.sql("SELECT query, query_version, run_id, batch_id FROM ops.stream_progress "
                     f"WHERE pipeline = '{p.name}'").collect()
    lineages: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for query, version, run_id, batch_id in rows:
        # the stateless query tags its rows with its lineage; the listener's rows (a session pipeline's
        # queries, the alerts query) carry Spark's run id, or 'recovered'
        own = stateless and query != "alerts"
        lineages[(query, version, run_id) if own else (query, version)].append(int(batch_id))
    out = []
    for lineage, ids in lineages.items():
        twice = sorted(b for b, c in Counter(ids).items() if c > 1)
        if twice:
            out.append(f"ops.stream_progress: lineage {lineage} recorded batches {twice[:5]} more than once")
        if len(lineage) == 3 and sorted(set(ids)) != list(range(min(ids), max(ids) + 1)):
            missing = sorted(set(range(min(ids), max(ids) + 1)) - set(ids))
            out.append(f"ops.stream_progress: lineage {lineage} has no row for batches {missing[:5]}")
    return out


def late_problems(spark: Any, p: Pipeline) -> list[str]:
    """Late rows twice (one speed version, one window), not behind their watermark, or missing from bronze."""
    table, bronze = naming.table("late", p.name), naming.table("bronze", p.name)
    if not spark.catalog.tableExists(table):
        return []
    spark.catalog.refreshTable(table)
    spark.catalog.refreshTable(bronze)
    twice = spark.sql(f"SELECT speed_version, kafka_partition, kafka_offset, window_start FROM {table} GROUP BY ALL "
                      "HAVING count(*) > 1 LIMIT 5").collect()
    ahead = spark.sql(f"SELECT count(*) FROM {table} WHERE event_time > watermark OR lateness_ms < 0 OR "
                      "lateness_ms != unix_millis(watermark) - unix_millis(event_time)").collect()[0][0]
    lost = spark.sql(f"SELECT count(*) FROM {table} l LEFT ANTI JOIN {bronze} b ON l.kafka_partition = "
                     f"b.kafka_partition AND l.kafka_offset = b.kafka_offset AND l.{p.event_id} = b.{p.event_id}"
                     ).collect()[0][0]
    out = [f"{table}: (version, partition, offset, window) held twice: {[tuple(r) for r in twice]}"] if twice else []
    out += [f"{table}: {ahead} rows not behind the watermark they name"] if ahead else []
    return out + ([f"{table}: {lost} late rows whose record is not in {bronze}"] if lost else [])


def problems_by_invariant(spark: Any, cfg: Any, p: Pipeline, records: list[Record], at_publish: Expected | None,
                          stateless: bool) -> dict[str, list[str] | None]:
    """Each invariant's problems ([] when it holds; None when it does not apply: no publish yet, kappa mode)."""
    published = (published_differences(spark, p, at_publish)
                 if cfg.mode == "lambda" and at_publish is not None else None)
    return {"offsets_once": offset_problems(spark_query(spark), cfg, p.name, p.topic),
            "speed_never_over_counts": over_counted(spark, cfg, p, records),
            "published_equals_oracle": published,
            "progress_once_per_lineage": progress_problems(spark, p, stateless),
            "late_rows_once": late_problems(spark, p)}


def oracle(p: Pipeline, records: list[Record]) -> Expected:
    return expected_serving(p, records)
