"""The third-party packages that may be imported inside a function, and nothing else.

Every other import sits at module top. These packages are the exceptions: each adds 10 ms or more to
``tidewater --help`` when imported on top of what the CLI already imports (``after_cli``; packages imported
only together count together), or is not installed in the environment that imports the module. A cheaper
package goes to the top.
``tidewater --help``, ``tidewater speed status`` and the Airflow DAG parser import the whole CLI or DAG
module graph, so a module imports one of these inside the function that uses it.

The figures are medians of seven fresh interpreters each on this 2-core machine, quiet (load average about
1, 2026-12-07); ``benchmarks/results/*-import_costs.md`` holds each run with its commit and load.

``tests/in_function_imports.py`` (a step of ``make lint``) fails on an in-function import of anything not
listed here, and ``tests/unit/test_deferred_imports.py`` fails when importing the CLI or a DAG file loads one of
them. ``python -m benchmarks.import_costs`` measures the figures below again and records them in
benchmarks/results/.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deferred:
    package: str            # the top-level import name
    measured: str           # the module imported for the figure (what the code imports)
    seconds: float | None   # its import time in a fresh interpreter on this machine; None: not installed here
    after_cli: float | None  # what it adds once the CLI and its commands are imported
    why: str                # who needs it, and why the CLI and the DAG parser must not pay for it


DEFERRED: tuple[Deferred, ...] = (
    Deferred("pyspark", "pyspark.sql.functions", 0.36, 0.35,
             "the Spark driver's API: only a job or a command that runs Spark uses it"),
    Deferred("py4j", "py4j.java_gateway", 0.03, 0.017, "pyspark's JVM bridge, used only inside a running driver"),
    Deferred("delta", "delta.tables", 0.38, 0.34, "Delta's Python API: MERGEs and table handles inside a Spark driver"),
    Deferred("great_expectations", "great_expectations", 4.8, 4.8,
             "the quality suites: only `tidewater check`, a batch audit and Data Docs run them"),
    Deferred("airflow", "airflow.sdk", 2.1, 1.9,
             "dags/tidewater_common.py is imported by DAG files and by tests that need no Airflow"),
    Deferred("matplotlib", "matplotlib.pyplot", 0.85, 0.8, "charts: `tidewater whatif --chart` and benchmark reports"),
    Deferred("pyarrow", "pyarrow.parquet", 0.18, 0.16, "reading ops.* Parquet files without Spark"),
    Deferred("kafka", "kafka", 0.18, 0.15, "kafka-python: topics, lag and produce, not needed to parse a command line"),
    Deferred("confluent_kafka", "confluent_kafka", 0.03, 0.014, "the benchmarks' fast producer and consumer"),
    Deferred("duckdb", "duckdb", 0.11, 0.08, "the benchmarks' oracle queries on Parquet"),
    Deferred("pyhive", "pyhive.hive", 0.03, 0.007,
             "the Thrift server's client (JDBC checks, TLS, Superset); every CLI start imports its callers, few connect"),
    Deferred("thrift", "thrift.transport.TSSLSocket", 0.013, 0.001, "pyhive's transport, imported only beside pyhive"),
    Deferred("thrift_sasl", "thrift_sasl", 0.002, 0.001, "pyhive's SASL transport, imported only beside pyhive"),
    Deferred("psycopg2", "psycopg2", 0.019, 0.01, "only with Airflow's metadata DB on PostgreSQL"),
    Deferred("cryptography", "cryptography.fernet", 0.015, 0.012, "only when Airflow's Fernet key is generated"),
    Deferred("psutil", "psutil", 0.03, 0.024, "the soak benchmark's process samples"),
    Deferred("superset", "superset", None, None, "installed only in Superset's own virtualenv (.venv-bi)"),
    Deferred("flask", "flask", None, None, "Superset's web framework, in .venv-bi only"),
    Deferred("flask_migrate", "flask_migrate", None, None, "Superset's migrations, in .venv-bi only"),
    Deferred("pyflink", "pyflink.table", None, None, "the Flink peer benchmark's own virtualenv"),
)

PACKAGES: frozenset[str] = frozenset(d.package for d in DEFERRED)
