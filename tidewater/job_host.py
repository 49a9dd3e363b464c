"""``python -m tidewater.job_host``: the job service process (started by ``tidewater up``, see
infra/job_service/__init__.py). The application wires the CLI's own dispatch (``tidewater.cli.run``)
into the server (infra/job_service/server.py), so every command runs the same code as in a process of its own.
"""

from __future__ import annotations

import importlib
import sys

from infra import job_service
from infra.job_service.server import serve
from infra.spark_session import get_spark
from lakehouse import naming
from lakehouse.config import load_config
from tidewater.cli import run

# imported once at start, not by the first command that needs them (GX alone takes seconds)
WARM_MODULES = ("spark_jobs.batch.job", "spark_jobs.shared.serving_view", "spark_jobs.batch.reconcile", "spark_jobs.maintenance.job",
                "expectations.runner", "great_expectations")


def main() -> int:
    cfg = load_config()
    fingerprint = job_service.fingerprint(cfg)  # of the code as it is now, before anything is imported
    token = job_service.token(cfg, create=True)
    assert token is not None
    for module in WARM_MODULES:
        importlib.import_module(module)
    spark = get_spark(cfg, "tidewater-job-service")
    warm = str(naming.run_dir(cfg) / "job_service_warmup")  # load Delta's classes before the first command
    spark.range(1).write.format("delta").mode("overwrite").save(warm)
    spark.read.format("delta").load(warm).collect()
    return serve(cfg, spark, run, token, fingerprint)


if __name__ == "__main__":
    sys.exit(main())
