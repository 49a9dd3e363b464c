"""Table names, checkpoint folders and the shared on-disk paths under ``data_dir``.

Topic names are each definition's ``topic`` field. Each local service names its own home folder
under ``data_dir`` next to the code that owns it: ``kafka/`` (infra/services/kafka_broker.py),
``metastore/`` (metastore.py), ``airflow/`` (airflow.py), ``docs/`` and ``gx_context/``
(expectations/context.py).

Layout under ``data_dir``::

    kafka/            broker log (KRaft metadata + topic partitions)
    metastore/        Derby network-server home (the Hive metastore database)
    warehouse/        Spark SQL warehouse: one folder per Delta table
    checkpoints/<pipeline>/<query>_v<N>/   one per streaming query version, never reused
    run/              PID files of local services and detached jobs
    logs/             service and job logs
    secrets/          generated credentials (mode 0600)
    versions/         active / previous speed version, and each version's writing lineage (lakehouse.speed_versions)
    docs/             Great Expectations Data Docs
    reports/          charts of the analysis commands (tidewater whatif)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path

from lakehouse.config import TidewaterConfig

LAYERS = ("bronze", "quarantine", "speed", "late", "alerts", "batch", "serving", "ops")
OPS_TABLES = ("stream_progress", "batch_runs", "reconciliation")
# The ingest query (Kafka -> bronze/quarantine) is never rebuilt from Kafka, so it has one version only.
INGEST_VERSION = 1


def table(layer: str, pipeline: str) -> str:
    """Fully qualified name of a pipeline's table in a layer, e.g. ``bronze.sensor_readings``."""
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; expected one of {LAYERS}")
    return f"{layer}.{pipeline}"


@dataclass(frozen=True)
class Tables:
    """One pipeline's table names, a field per layer (``table``): built once from the pipeline
    (``Pipeline.tables``) and passed along with it. A speed version's table is ``speed_table``."""

    bronze: str
    quarantine: str
    late: str
    alerts: str
    batch: str
    serving: str


def tables(pipeline: str) -> Tables:
    """The names of ``pipeline``'s tables."""
    return Tables(**{layer.name: table(layer.name, pipeline) for layer in fields(Tables)})


def speed_table(pipeline: str, version: int = 1) -> str:
    """Speed results of one query version: v1 is ``speed.<p>``, later replays ``speed.<p>__v<N>``."""
    return f"speed.{pipeline}" if version == 1 else f"speed.{pipeline}__v{version}"


def alerts_topic(topic: str) -> str:
    """The Kafka topic a pipeline's alerts go to, keyed by ``alert_id`` (``spark_jobs.alerts``)."""
    return f"{topic}.alerts"


def alerts_checkpoint(cfg: TidewaterConfig, pipeline: str) -> Path:
    """The alerts query's checkpoint: one lineage of its own, outside the speed versions' ``<query>_v<N>``
    folders (replay and maintenance never take it for a speed version's). Its name changes when the query's
    plan changes in a way Spark cannot restart from: a new lineage recomputes the alerts from the earliest
    offsets, and the sink's MERGE skips every alert already stored."""
    return cfg.data_dir / "checkpoints" / pipeline / "alert_patterns"


def speed_partials_table(pipeline: str, version: int = 1) -> str:
    """Append-only partials behind a tumbling/sliding pipeline's speed view (``lakehouse.speed_fold``)."""
    return f"{speed_table(pipeline, version)}__partials"


def ops_table(name: str) -> str:
    if name not in OPS_TABLES:
        raise ValueError(f"unknown ops table {name!r}; expected one of {OPS_TABLES}")
    return f"ops.{name}"


def asset_uri(layer: str, pipeline: str) -> str:
    """URI of the Airflow Asset that a publish of ``<layer>.<pipeline>`` updates (the DAGs' outlets and
    the CLI's Asset events for its own publishes), e.g. ``tidewater://batch/sensor_readings``."""
    table(layer, pipeline)  # a known layer
    return f"tidewater://{layer}/{pipeline}"


def staging_table(layer: str, pipeline: str) -> str:
    return f"{layer}.{pipeline}__staging"


def checkpoint_dir(cfg: TidewaterConfig, pipeline: str, query: str, version: int, lineage: int = 1) -> Path:
    """Checkpoint of one query lineage of a version: ``<query>_v<N>`` for its first lineage,
    ``<query>_v<N>-l<K>`` for the K-th (a version switched away from and back to continues in a new
    lineage: ``spark_jobs.speed.lineages``). A new version always gets a new folder."""
    suffix = "" if lineage == 1 else f"-l{lineage}"
    return cfg.data_dir / "checkpoints" / pipeline / f"{query}_v{version}{suffix}"


CHECKPOINT_NAME = re.compile(r"^(?P<query>[a-z]+)_v(?P<version>\d+)(?:-l(?P<lineage>\d+))?$")


def checkpoint_version(name: str) -> int | None:
    """The version a checkpoint folder's name (``checkpoint_dir``) belongs to; None for other names."""
    match = CHECKPOINT_NAME.match(name)
    return int(match.group("version")) if match else None


def txn_app_id(pipeline: str, sink: str, query_id: str) -> str:
    """Delta ``txnAppId`` for idempotent writes into ``sink`` by one query lineage: ``query_id`` is
    the id Spark stores in the checkpoint, so a new checkpoint always means a new app id
    (``spark_jobs.io.lineage``)."""
    return f"tidewater.{pipeline}.{sink}.{query_id}"


def warehouse_dir(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "warehouse"


def run_dir(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "run"


def logs_dir(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "logs"


def secrets_dir(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "secrets"


def cache_dir() -> Path:
    """The checkout's installed artifacts (jars, class-data-sharing archives): ``.cache``, not in git."""
    return Path(__file__).resolve().parent.parent / ".cache"


def jars_dir(kind: str) -> Path:
    """Jars fetched by Maven (see infra/pom.xml): ``spark``, ``kafka`` or ``metastore``."""
    return cache_dir() / "jars" / kind


def versions_dir(cfg: TidewaterConfig) -> Path:
    """Active / previous speed query version per pipeline (``<p>.active``, ``<p>.previous``)."""
    return cfg.data_dir / "versions"


def reports_dir(cfg: TidewaterConfig) -> Path:
    """Charts the analysis commands write (``tidewater whatif``)."""
    return cfg.data_dir / "reports"


def jvm_scratch_dir(cfg: TidewaterConfig) -> Path:
    """Scratch folders of the driver JVMs (Spark's local dirs, the JVM's temp dir): ``infra.jvm_scratch``."""
    return cfg.data_dir / "jvm-scratch"
