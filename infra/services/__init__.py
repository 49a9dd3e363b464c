"""Local services managed by ``tidewater up|down|status``, in start order.

Each module exposes ``start(cfg)``, ``stop(cfg)``, ``healthy(cfg)`` and ``status(cfg)``.
"""

SERVICE_MODULES = (
    "infra.services.postgres",  # only with airflow.database or metastore.backend = postgres
    "infra.services.metastore",
    "infra.services.kafka_broker",
    "infra.services.thrift_server",
    "infra.job_service",  # one warm Spark driver for Spark-bound commands (job_service.enabled)
    "infra.services.airflow",
    "infra.services.superset",  # only when bi.enabled (``make bi``)
)
