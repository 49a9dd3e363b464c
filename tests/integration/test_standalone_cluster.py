"""The cluster path: one setting sends a job to a Spark standalone master (pyspark's own jars)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

pytestmark = pytest.mark.integration

JOB = """
from lakehouse.config import load_config
from infra.spark_session import get_spark
cfg = load_config()
spark = get_spark(cfg, "cluster-probe")
assert spark.sparkContext.master == cfg.spark.master, spark.sparkContext.master
spark.range(0, 5000, numPartitions=4).selectExpr("id", "id * 2 AS twice").write.format("delta") \\
    .mode("overwrite").saveAsTable("bronze.cluster_probe")
row = spark.sql("SELECT count(*) AS n, sum(twice) AS s FROM bronze.cluster_probe").collect()[0]
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
print(f"RESULT {row.n} {row.s} {executors}")
spark.stop()
"""


def test_delta_write_and_read_on_standalone_master(stack: TidewaterConfig) -> None:
    import pyspark

    from infra.services.ports import free_port
    from infra.services.process import ManagedProcess, port_open, wait_until

    spark_home = Path(pyspark.__file__).parent
    master_port, worker_ui, master_ui = free_port(), free_port(), free_port()
    run, logs = stack.data_dir / "run", stack.data_dir / "logs"
    env = {"SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1"}
    master = ManagedProcess("spark-master", run, logs)
    worker = ManagedProcess("spark-worker", run, logs)
    spark_class = str(spark_home / "bin" / "spark-class")
    try:
        master.start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                      "--port", str(master_port), "--webui-port", str(master_ui)], env=env,
                     marker="org.apache.spark.deploy.master.Master")
        assert wait_until(lambda: port_open("127.0.0.1", master_port), 90), master.tail()
        worker.start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                      "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui),
                      f"spark://127.0.0.1:{master_port}"], env=env, marker="org.apache.spark.deploy.worker.Worker")
        assert wait_until(lambda: "Successfully registered with master" in worker.tail(50), 90), worker.tail()
        job_env = {**os.environ, "TIDEWATER_SPARK_MASTER": f"spark://127.0.0.1:{master_port}", **env}
        out = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, env=job_env, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        result = [line for line in out.stdout.splitlines() if line.startswith("RESULT")][-1].split()
        assert result[1:3] == ["5000", str(sum(i * 2 for i in range(5000)))]
        assert int(result[3]) >= 2  # the driver plus at least one executor on the worker
    finally:  # spark-class execs java: the class name is what stays on the command line (marker)
        stopped = (worker.stop(), master.stop())
    assert stopped == (True, True), "master and worker were found running by their PID files and stopped"
    assert not worker.running() and not master.running()
