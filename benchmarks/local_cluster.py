"""A local Spark standalone cluster for scenario 10's ``cluster`` mode: one master and ``WORKERS`` workers.

Started from pyspark's own jars (``bin/spark-class``, as ``tests/integration/test_standalone_cluster.py``
does), every listener on 127.0.0.1, each worker with ``WORKER_CORES`` core and ``WORKER_MEMORY`` for its
executor (``spark.executor.memory`` is set to the same), the daemons' own heap ``DAEMON_MEMORY``. The master,
the workers and every application authenticate: ``spark.authenticate`` with a secret generated here and
written 0600 into ``spark-defaults.conf`` in a private ``SPARK_CONF_DIR``, which the master, the workers and
the driver (its ``spark-submit``) read; a worker hands it to its executors in their environment. It is on
no command line. The web UIs cannot kill anything (``spark.ui.killEnabled``), the REST submission server is
off. The master and the workers, and so their executors, run at ``nice`` (the speed layer's
``spark.speed_nice``, as the speed host's driver does). ``standalone_cluster`` yields the master's URL and
the environment a driver needs, and stops the workers and the master when it ends.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from infra.secret_files import create_once
from infra.services.ports import free_port
from infra.services.process import ManagedProcess, port_open, wait_until

WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"
DAEMON_MEMORY = "256m"
START_TIMEOUT_S = 120
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass(frozen=True)
class LocalCluster:
    master_url: str
    env: dict[str, str]  # SPARK_HOME, SPARK_CONF_DIR and the loopback address, for the driver's process
    processes: tuple[ManagedProcess, ...]
    secret: str

    def pids(self) -> list[int]:
        return [pid for pid in (proc.pid() for proc in self.processes) if pid]


def write_conf(conf_dir: Path) -> str:
    """``spark-defaults.conf`` with a generated secret (``create_once``: 0600, its folder 0700); the secret."""
    path = conf_dir / "spark-defaults.conf"
    settings = {"spark.authenticate": "true", "spark.authenticate.secret": secrets.token_hex(32),
                "spark.ui.killEnabled": "false", "spark.master.rest.enabled": "false",
                "spark.executor.memory": WORKER_MEMORY}
    create_once(path, lambda: "".join(f"{k} {v}\n" for k, v in settings.items()))
    return dict(line.split(" ", 1) for line in path.read_text().splitlines())["spark.authenticate.secret"]


def registered(worker: ManagedProcess, log_mark: int) -> Callable[[], bool]:
    return lambda: "Successfully registered with master" in worker.log_since(log_mark)


@contextlib.contextmanager
def standalone_cluster(folder: Path, run_dir: Path, log_dir: Path, nice: int) -> Iterator[LocalCluster]:
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    secret = write_conf(folder / "conf")
    env = {"SPARK_HOME": str(spark_home), "SPARK_CONF_DIR": str(folder / "conf"), "SPARK_LOCAL_IP": "127.0.0.1"}
    daemon_env = {**env, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "SPARK_LOCAL_DIRS": str(folder / "scratch")}
    spark_class = str(spark_home / "bin" / "spark-class")
    port = free_port()
    master = ManagedProcess("bench-spark-master", run_dir, log_dir)
    workers = [ManagedProcess(f"bench-spark-worker-{i}", run_dir, log_dir) for i in range(WORKERS)]
    url = f"spark://127.0.0.1:{port}"
    marks = [worker.log_size() for worker in workers]
    try:
        master.start([spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                      "--webui-port", str(free_port())], env=daemon_env, marker=MASTER_CLASS, nice=nice)
        if not wait_until(lambda: port_open("127.0.0.1", port), START_TIMEOUT_S):
            raise RuntimeError(f"scenario 10: the standalone master did not listen; log {master.log_file}:\n{master.tail()}")
        for i, worker in enumerate(workers):
            work_dir = folder / f"worker-{i}"
            work_dir.mkdir(parents=True, exist_ok=True)
            worker.start([spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(WORKER_CORES),
                          "--memory", WORKER_MEMORY, "--work-dir", str(work_dir), "--webui-port", str(free_port()),
                          url], env=daemon_env, marker=str(work_dir), nice=nice)
        for worker, mark in zip(workers, marks, strict=True):
            if not wait_until(registered(worker, mark), START_TIMEOUT_S):
                raise RuntimeError(f"scenario 10: a worker did not register; log {worker.log_file}:\n{worker.tail()}")
        yield LocalCluster(url, env, (master, *workers), secret)
    finally:
        for proc in [*workers, master]:
            proc.stop()
