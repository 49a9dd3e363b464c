"""Table contracts: schema, grain (keys), partitioning and owner of every table, in one place.

Tables are created with ``CREATE TABLE IF NOT EXISTS`` so every job can call ``ensure(spark, ...)``.
The contract is also stored in the table properties (``tidewater.grain``, ``tidewater.owner``)
so a BI user can read it with ``SHOW TBLPROPERTIES``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakehouse import definition, naming
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import FIELD_TYPES, Pipeline
from lakehouse.speed_fold import fold_sql
from lakehouse.window_kinds import kind_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Event-time bounds: earlier is IMPOSSIBLE_TIMESTAMP (parser) and fails the bronze suite; the bronze
# suite also rejects event times more than one day after the validation run.
MIN_EVENT_MS = 946_684_800_000  # 2000-01-01T00:00:00Z
MAX_EVENT_AHEAD_SECONDS = 86_400
# Relative tolerance of double aggregates: a batch value within it of the speed value is the same number.
DOUBLE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Contract:
    name: str
    columns: tuple[tuple[str, str], ...]
    grain: tuple[str, ...]
    partitioned_by: tuple[str, ...] = ()
    owner: str = "tidewater"
    properties: tuple[tuple[str, str], ...] = ()
    view: str = ""  # SQL of a view: the contract names a view over ``requires``, not a Delta table
    requires: tuple[Contract, ...] = ()

    def ddl(self) -> str:
        props = {"tidewater.owner": self.owner, "tidewater.grain": ",".join(self.grain), **dict(self.properties)}
        tbl = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
        if self.view:
            return f"CREATE VIEW IF NOT EXISTS {self.name} TBLPROPERTIES ({tbl}) AS {self.view}"
        cols = self.schema
        part = f" PARTITIONED BY ({', '.join(self.partitioned_by)})" if self.partitioned_by else ""
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({cols}) USING delta{part} TBLPROPERTIES ({tbl})"

    @property
    def schema(self) -> str:
        """The columns as a Spark DDL schema string (``createDataFrame``, ``CREATE TABLE``)."""
        return ", ".join(f"`{c}` {t}" for c, t in self.columns)

    @property
    def column_names(self) -> list[str]:
        return [c for c, _ in self.columns]


KAFKA_META = (("kafka_topic", "string"), ("kafka_partition", "int"), ("kafka_offset", "bigint"),
              ("kafka_timestamp", "timestamp"), ("ingest_time", "timestamp"))


# Tables that take one commit per micro-batch: Delta writes a checkpoint every N commits, which rebuilds
# the whole table state inside the commit that crosses it (2-3 s on 2 cores, measured: the stream's
# slowest micro-batches were exactly those); 100 keeps such stalls rare and readers' log replay short.
STREAMED = (("delta.checkpointInterval", "100"),)
# Tables an incremental batch run MERGEs a few windows into, spread over the whole history: deletion
# vectors mark the replaced rows instead of rewriting every file that holds one. No auto compaction:
# after each such MERGE it rewrote every file the MERGE had marked, i.e. the whole table (3.3 s of a
# 100M-event run's publish); the maintenance DAG's OPTIMIZE folds the small files instead
# (and the session turns it off for tables created with it on: ``infra.spark_session``).
MERGED = (("delta.enableDeletionVectors", "true"),)


def defined_by(p: Pipeline) -> tuple[str, str]:
    """The table property of a table of ``p``'s windows: the definition they are computed under."""
    return (definition.PROPERTY, definition.encoded(p))


def _event_columns(p: Pipeline) -> tuple[tuple[str, str], ...]:
    return tuple((f, FIELD_TYPES[t]) for f, t in p.schema.items())


def aggregate_type(p: Pipeline, fn: str, column: str | None) -> str:
    if fn in ("count", "approx_distinct"):
        return "bigint"
    if fn == "avg":
        return "double"
    src = FIELD_TYPES[p.schema[str(column)]]
    if fn == "sum":
        return "double" if src == "double" else "bigint"
    return src


def window_columns(p: Pipeline) -> tuple[tuple[str, str], ...]:
    keys = tuple((k, FIELD_TYPES[p.schema[k]]) for k in p.keys)
    aggs = tuple((a.name, aggregate_type(p, a.fn, a.column)) for a in p.aggregates)
    return (*keys, ("window_start", "timestamp"), ("window_end", "timestamp"), *aggs, ("max_event_time", "timestamp"))


def result_columns(p: Pipeline) -> list[str]:
    """Columns of a windowed result (speed, batch and serving rows), in order: grain, aggregates, max_event_time."""
    return [c for c, _ in window_columns(p)]


def bronze(p: Pipeline) -> Contract:
    """Every valid event exactly once, with its Kafka position: the master dataset."""
    return Contract(
        p.tables.bronze,
        (*_event_columns(p), ("event_time", "timestamp"), *KAFKA_META, ("event_date", "date")),
        grain=("kafka_topic", "kafka_partition", "kafka_offset"), partitioned_by=("event_date",), owner=p.owner,
        properties=(("delta.enableChangeDataFeed", "true"), ("delta.appendOnly", "true"), *STREAMED),
    )


def quarantine(p: Pipeline) -> Contract:
    """Every unusable record with its raw value and the reason it was rejected."""
    return Contract(
        p.tables.quarantine,
        (("raw_value", "string"), *KAFKA_META[:4], ("reason_code", "string"), ("reason", "string"),
         ("ingest_time", "timestamp")),
        grain=("kafka_topic", "kafka_partition", "kafka_offset"), owner=p.owner, properties=STREAMED,
    )


def partial_columns(p: Pipeline) -> tuple[tuple[str, str], ...]:
    """Mergeable state behind the aggregates that cannot be combined from their own values: the sum
    and count behind an ``avg``, the HyperLogLog sketch behind an ``approx_distinct``. Session
    pipelines keep Spark's own state instead (their speed table has no partial columns)."""
    if kind_of(p.window).keeps_state:
        return ()
    out: list[tuple[str, str]] = []
    for a in p.aggregates:
        if a.fn == "avg":
            out += [(f"_sum_{a.name}", "double"), (f"_n_{a.name}", "bigint")]
        elif a.fn == "approx_distinct":
            out.append((f"_hll_{a.name}", "binary"))
    return tuple(out)


def speed(p: Pipeline, version: int = 1) -> Contract:
    """Provisional windowed results; ``is_final`` once the watermark passed. Tumbling and sliding
    windows: a VIEW folding the append-only ``speed_partials`` (``lakehouse.speed_fold``). Session
    windows: a Delta table of open and closed sessions (``speed.session_sink.SessionMerge``)."""
    columns = (*window_columns(p), ("updated_at", "timestamp"), ("batch_id", "bigint"), ("is_final", "boolean"),
               *partial_columns(p))
    name = naming.speed_table(p.name, version)
    if kind_of(p.window).keeps_state:
        return Contract(name, columns, grain=p.grain, owner=p.owner, properties=(defined_by(p),))

    partials = speed_partials(p, version)
    return Contract(name, columns, grain=p.grain, owner=p.owner, view=fold_sql(p, partials.name), requires=(partials,))


def speed_partials(p: Pipeline, version: int = 1) -> Contract:
    """Append-only per-window partials of each micro-batch (one append per micro-batch, ``lineage`` =
    the checkpoint's query id), compacted in place by the stream (``compacted`` rows fold the rows
    before them and keep the ``batch_id`` and ``lineage`` of the latest). Partitioned by ``slot``
    (``speed_fold.slot_of``): a compaction and the appends that run beside it touch disjoint partitions."""
    return Contract(
        naming.speed_partials_table(p.name, version),
        (*window_columns(p), ("updated_at", "timestamp"), ("batch_id", "bigint"), *partial_columns(p),
         ("watermark", "timestamp"), ("lineage", "string"), ("compacted", "boolean"), ("slot", "int")),
        grain=(*p.grain, "batch_id"), partitioned_by=("slot",), owner=p.owner,
        properties=(*STREAMED, defined_by(p)),
    )


def late(p: Pipeline) -> Contract:
    """The events the speed layer left out because they were behind the watermark of the micro-batch
    that read them (``spark_jobs.speed.late_rows``, ``spark_jobs.speed.session_late``): one row per Kafka
    record and window it missed (a sliding window's event misses every window it belongs to; a session
    pipeline's event, the session it would have opened), with the watermark, its
    lateness (watermark - event time, ms), the micro-batch, the speed version and its lineage.
    ``window_key`` is the reconciliation ledger's (``ops.reconciliation``): the join key beside the window."""
    keys = tuple((k, FIELD_TYPES[p.schema[k]]) for k in p.keys)
    return Contract(
        p.tables.late,
        ((p.event_id, "string"), *keys, ("event_time", "timestamp"), ("arrival_time", "timestamp"),
         ("ingest_time", "timestamp"), *KAFKA_META[:3], ("watermark", "timestamp"), ("lateness_ms", "bigint"),
         ("window_key", "string"), ("window_start", "timestamp"), ("window_end", "timestamp"), ("batch_id", "bigint"),
         ("speed_version", "int"), ("lineage", "string")),
        grain=("kafka_topic", "kafka_partition", "kafka_offset", "speed_version", "window_start"), owner=p.owner,
        properties=STREAMED,
    )


def alerts(p: Pipeline) -> Contract:
    """The alerts of ``p``'s ``alerts:`` patterns (``spark_jobs.alerts``), each once: ``alert_id`` is derived
    from the pattern, the key and the matched events' ids, so a recomputed alert is the same row. Times of
    the matched events in their order, the watermark the alert was decided at, and the first emission."""
    return Contract(
        p.tables.alerts,
        (("alert_id", "string"), ("pattern", "string"), ("kind", "string"), ("key", "string"),
         ("event_ids", "array<string>"), ("event_times", "array<timestamp>"), ("first_event_time", "timestamp"),
         ("last_event_time", "timestamp"), ("watermark", "timestamp"), ("emitted_at", "timestamp"), ("batch_id", "bigint")),
        grain=("alert_id",), owner=p.owner, properties=STREAMED,
    )


def storage_table(p: Pipeline, version: int = 1) -> str:
    """The Delta table that holds a speed version's rows (what a new lineage empties)."""
    contract = speed(p, version)
    return contract.requires[0].name if contract.view else contract.name


def batch(p: Pipeline) -> Contract:
    """Exact windowed results recomputed from bronze, for windows ending at or before the cutoff, with
    what ``serving.<p>`` shows beside them, decided at publish (``SERVED_COLUMNS``): the view reads this
    table itself, so a publish writes one table, not a copy for serving."""
    return Contract(p.tables.batch, (*computed_batch_columns(p), *SERVED_COLUMNS),
                    grain=p.grain, owner=p.owner, properties=(*MERGED, defined_by(p)))


def computed_batch_columns(p: Pipeline) -> tuple[tuple[str, str], ...]:
    """The columns a batch run computes (staged, then published with ``SERVED_COLUMNS``)."""
    return (*window_columns(p), ("computed_at", "timestamp"), ("run_id", "string"), ("bronze_version", "bigint"))


STREAM_PROGRESS = Contract(
    naming.ops_table("stream_progress"),
    (("pipeline", "string"), ("query", "string"), ("query_version", "int"), ("run_id", "string"),
     ("batch_id", "bigint"), ("batch_time", "timestamp"), ("input_rows", "bigint"),
     ("input_rows_per_second", "double"), ("processed_rows_per_second", "double"), ("batch_duration_ms", "bigint"),
     ("watermark", "timestamp"), ("state_rows", "bigint"), ("rows_dropped_by_watermark", "bigint"),
     ("end_offsets", "string"), ("latest_offsets", "string"), ("recorded_at", "timestamp")),
    grain=("pipeline", "query", "query_version", "run_id", "batch_id"), properties=STREAMED,
)

# What a CREATE TABLE IF NOT EXISTS raises while another process creates the same table: Delta has
# written files at the location but not yet committed its log, or the metastore entry appeared meanwhile.
CREATE_RACE_ERRORS = ("DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION", "TABLE_OR_VIEW_ALREADY_EXISTS",
                      "TABLE_ALREADY_EXISTS", "AlreadyExistsException")


# (Spark application, DDL) pairs ensured in this process. Tidewater never drops a table, so one check
# per application is enough; a run calls ``ensure`` for the same tables at every step, and each check
# (DDL, catalog lookups, the partition listing) costs 0.2-0.7 s on 2 cores. A new Spark application
# (the tests' next module: a new metastore) checks again.
_ENSURED: set[tuple[str, str]] = set()


def ensure(spark: SparkSession, *contracts: Contract) -> None:
    """Create the tables that are missing. The ``ops`` tables are shared by every pipeline's jobs, which
    may start at once (the speed supervisor DAG's tasks run in parallel): a CREATE that loses the race
    is retried until the winner's table is complete, instead of the job dying at start."""
    app = _application(spark)
    for contract in contracts:
        ddl = contract.ddl()
        if (app, ddl) in _ENSURED:
            continue
        ensure(spark, *contract.requires)
        if contract.view:
            _refuse_table_for_view(spark, contract.name)
        elif contract.partitioned_by:
            _refuse_other_partitioning(spark, contract)
        create_racing(spark, ddl)
        _ENSURED.add((app, ddl))


def create_racing(spark: SparkSession, ddl: str) -> None:
    """Run a ``CREATE ... IF NOT EXISTS``; while another process creates the same table (one of
    ``CREATE_RACE_ERRORS``), try again until the winner's table is complete. Other errors raise."""
    for attempt in range(40):
        try:
            spark.sql(ddl)
            return
        except Exception as exc:
            if attempt == 39 or not any(code in str(exc) for code in CREATE_RACE_ERRORS):
                raise
            time.sleep(0.5)


def _application(spark: SparkSession) -> str:
    """The Spark application's id, with the metastore it uses (one key per catalog a process sees)."""
    conf = spark.sparkContext.getConf()
    return f"{spark.sparkContext.applicationId}|{conf.get('spark.hadoop.javax.jdo.option.ConnectionURL', '')}"


def _refuse_table_for_view(spark: SparkSession, name: str) -> None:
    if spark.catalog.tableExists(name) and spark.catalog.getTable(name).tableType != "VIEW":
        raise TidewaterError(f"{name} is a Delta table from an older Tidewater layout, where it must now be a view "
                             "over its __partials table; rebuild it with 'tidewater replay' or start from an empty data_dir")


def _refuse_other_partitioning(spark: SparkSession, contract: Contract) -> None:
    if not spark.catalog.tableExists(contract.name):
        return
    have = tuple(c.name for c in spark.catalog.listColumns(contract.name) if c.isPartition)
    if have != contract.partitioned_by:
        raise TidewaterError(f"{contract.name} is partitioned by ({', '.join(have)}) from an older Tidewater layout, "
                             f"where it must be partitioned by ({', '.join(contract.partitioned_by)}); rebuild it "
                             "with 'tidewater replay' or start from an empty data_dir")


BATCH_RUNS = Contract(
    naming.ops_table("batch_runs"),
    (("run_id", "string"), ("pipeline", "string"), ("mode", "string"), ("status", "string"),
     ("bronze_version", "bigint"), ("previous_bronze_version", "bigint"), ("cutoff", "timestamp"),
     ("windows_written", "bigint"), ("windows_deleted", "bigint"), ("events_read", "bigint"),
     ("duration_ms", "bigint"), ("staged_at", "timestamp"), ("published_at", "timestamp"), ("message", "string"),
     # the version of batch.<p>__staging the run wrote; the quality gate's verdict and the version it validated
     ("staging_version", "bigint"), ("gate", "string"), ("gated_version", "bigint")),
    grain=("run_id", "status"), properties=STREAMED,  # one row per run and status, appended (``spark_jobs.io.batch_runs``)
)

RECONCILIATION = Contract(
    naming.ops_table("reconciliation"),
    (("run_id", "string"), ("pipeline", "string"), ("window_key", "string"), ("window_start", "timestamp"),
     ("window_end", "timestamp"), ("aggregate", "string"), ("speed_value", "double"), ("batch_value", "double"),
     ("abs_error", "double"), ("rel_error", "double"), ("exact", "boolean"), ("late_events", "bigint"),
     ("duplicates_removed", "bigint"), ("quarantined", "bigint"), ("recorded_at", "timestamp"), ("late_rows", "bigint")),
    grain=("run_id", "pipeline", "window_key", "window_start", "window_end", "aggregate"),
)


SERVING_COLUMNS = (("source", "string"), ("finality", "string"), ("as_of", "string"))
# Of those, what a batch row gets at publish (its ``source`` is 'batch'): ``finality`` against the speed
# layer then, and ``as_of``, the Delta versions behind it (``spark_jobs.shared.serving_view.served_select``).
SERVED_COLUMNS = tuple(c for c in SERVING_COLUMNS if c[0] != "source")


# ``op`` of a staged row: write the window (``upsert``); write a window the run read from ``batch.<p>``, so
# it is there (``update``: a fold's windows; a MERGE of updates only needs no insert clause, 0.7-0.9 s less
# at 100M bronze events); or delete it. Their order matters: ``staged_ops`` reads which are
# present from the min and max of the column's file statistics.
STAGED_OPS = ("delete", "update", "upsert")
WRITTEN_OPS = ("update", "upsert")


def batch_staging(p: Pipeline) -> Contract:
    """One staged (not yet published) batch run: its rows and what publish does with each (``op``, one of
    ``STAGED_OPS``)."""
    return Contract(naming.staging_table("batch", p.name), (*computed_batch_columns(p), ("op", "string")),
                    grain=p.grain, owner=p.owner)
