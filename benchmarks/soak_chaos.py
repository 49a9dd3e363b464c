"""The soak's faults: kill -9, at seeded random moments, of the speed job, one Kafka broker, the Airflow
scheduler and the Thrift server, and how each comes back.

* speed job (its Python driver and JVM, the whole process group): Tidewater's own mechanism, the
  ``tidewater_speed`` supervisor DAG, starts it again; recovered = a new process that committed a
  micro-batch. The soak never starts it, unless the supervisor missed its deadline (then the fault fails).
* a broker, the scheduler (its process group: the scheduler, its executor and running task processes),
  the Thrift server: nothing in Tidewater supervises them, so the soak restarts each as an operator
  would, ``tidewater up --only <service>`` (idempotent: it starts only what is not running), and
  records that it did. A broker is back when every partition has all its replicas in sync again; the
  Thrift server when it answers a query on ``serving.<p>``; the scheduler when Airflow reports it healthy.

Each fault runs in its own thread at its planned moment; the speed-job and scheduler faults never
overlap (the speed job's recovery needs the scheduler).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.soak_stack import jdbc_query
from infra.services import airflow, kafka_broker
from infra.services.log_evidence import job_evidence
from infra.services.process import ManagedProcess, wait_until
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.naming import checkpoint_dir
from lakehouse.pipeline import Pipeline
from spark_jobs.io.lineage import committed_batches
from spark_jobs.speed.control import speed_process, start_speed

FAULTS = ("speed_job", "kafka_broker", "airflow_scheduler", "thrift_server")
OPERATOR = "soak, as an operator: tidewater up --only {service} (no Tidewater supervisor for it)"


@dataclass
class Fault:
    kind: str
    planned_s: float              # seconds after the producer started
    target: str = ""
    injected_s: float | None = None
    recovered_s: float | None = None
    recovered_by: str = ""
    ok: bool = False
    notes: list[str] = field(default_factory=list)


def plan(rng: random.Random, start_s: float, end_s: float) -> list[Fault]:
    """One fault of each kind in a random order, each at a random moment in its quarter of [start, end]."""
    slot = (end_s - start_s) / len(FAULTS)
    return [Fault(kind, round(start_s + i * slot + rng.uniform(0, slot * 0.6), 1))
            for i, kind in enumerate(rng.sample(FAULTS, len(FAULTS)))]


class Chaos:
    def __init__(self, cfg: TidewaterConfig, p: Pipeline, rng: random.Random, broker_down_s: float,
                 recovery_timeout_s: float) -> None:
        self.cfg, self.p, self.rng = cfg, p, rng
        self.broker_down_s, self.recovery_timeout_s = broker_down_s, recovery_timeout_s
        self.supervision = threading.Lock()  # speed-job and scheduler faults one at a time
        self.threads: list[threading.Thread] = []
        self.faults: list[Fault] = []
        self.t0 = 0.0

    def start(self, faults: list[Fault], t0: float) -> None:
        self.faults, self.t0 = faults, t0
        for fault in faults:
            thread = threading.Thread(target=self._run, args=(fault,), daemon=True, name=f"chaos-{fault.kind}")
            thread.start()
            self.threads.append(thread)

    def join(self, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for fault in self.faults:
            if fault.recovered_s is None:
                fault.notes.append("not recovered when the soak ended")
        return [asdict(f) for f in self.faults]

    def now(self) -> float:
        return round(time.time() - self.t0, 1)

    def _run(self, fault: Fault) -> None:
        time.sleep(max(0.0, self.t0 + fault.planned_s - time.time()))
        try:
            if fault.kind in ("speed_job", "airflow_scheduler"):
                with self.supervision:
                    getattr(self, fault.kind)(fault)
            else:
                getattr(self, fault.kind)(fault)
        except Exception as exc:  # recorded: the fault's check fails with the reason
            fault.notes.append(f"{type(exc).__name__}: {exc}"[:500])
        print(f"soak: fault {fault.kind} ({fault.target}) injected at {fault.injected_s}s, recovered at "
              f"{fault.recovered_s}s by {fault.recovered_by or '-'} {'; '.join(fault.notes)[:300]}", flush=True)

    def _kill(self, fault: Fault, name: str) -> None:
        proc = ManagedProcess(name, naming.run_dir(self.cfg), naming.logs_dir(self.cfg))
        fault.target = f"{name} (pid {proc.pid()})"
        if not proc.running():
            raise RuntimeError(f"{name} was not running when its fault came")
        proc.stop(timeout=0, sig=signal.SIGKILL)  # SIGKILL to its whole process group
        fault.injected_s = self.now()

    def _operator_up(self, fault: Fault, service: str) -> None:
        out = subprocess.run([sys.executable, "-m", "tidewater.cli", "up", "--only", service],
                             capture_output=True, text=True, timeout=900)
        fault.recovered_by = OPERATOR.format(service=service)
        fault.notes.append(f"tidewater up --only {service}: exit {out.returncode} at {self.now()}s")
        if out.returncode not in (0, 1):  # 1: some other service is unhealthy right now (another fault)
            raise RuntimeError(f"tidewater up --only {service} exited {out.returncode}: {out.stderr[-300:]}")

    def speed_job(self, fault: Fault) -> None:
        proc = speed_process(self.cfg, self.p)
        old = proc.pid()
        self._kill(fault, proc.name)
        commits = len(committed_batches(checkpoint_dir(self.cfg, self.p.name, "stream", 1)))

        def back() -> bool:
            pid = proc.pid()
            return pid not in (None, old) and len(committed_batches(
                checkpoint_dir(self.cfg, self.p.name, "stream", 1))) > commits

        if wait_until(back, self.recovery_timeout_s, 2):
            fault.recovered_s, fault.ok = self.now(), True
            fault.recovered_by = "Tidewater: the tidewater_speed supervisor DAG (Airflow) restarted it"
        else:
            fault.notes.append(f"no new speed job committed a micro-batch within {self.recovery_timeout_s:.0f}s "
                               f"(pid {old} -> {proc.pid()}); the soak started it if down. Log: "
                               f"{speed_log_evidence(self.cfg, self.p)}")
            start_speed(self.cfg, self.p, wait=300)
            fault.recovered_by = "soak (fallback)"

    def kafka_broker(self, fault: Fault) -> None:
        node_id = self.rng.randint(1, self.cfg.kafka.brokers)
        self._kill(fault, kafka_broker.node_process(self.cfg, node_id).name)
        time.sleep(self.broker_down_s)
        self._operator_up(fault, "kafka_broker")
        if wait_until(lambda: not kafka_broker.under_replicated(self.cfg, [self.p.topic]), 300, 2):
            fault.recovered_s, fault.ok = self.now(), True
        else:
            fault.notes.append(f"still under-replicated: {kafka_broker.under_replicated(self.cfg, [self.p.topic])}")

    def airflow_scheduler(self, fault: Fault) -> None:
        self._kill(fault, "airflow-scheduler")
        time.sleep(5)  # an operator notices
        self._operator_up(fault, "airflow")
        if airflow.component_health(self.cfg).get("scheduler") == "healthy":
            fault.recovered_s, fault.ok = self.now(), True
        else:
            fault.notes.append(f"after the restart: {airflow.component_health(self.cfg)}")

    def thrift_server(self, fault: Fault) -> None:
        self._kill(fault, "thrift_server")
        time.sleep(5)
        self._operator_up(fault, "thrift_server")
        rows = jdbc_query(self.cfg, f"SELECT count(*) FROM serving.{self.p.name}")
        fault.recovered_s, fault.ok = self.now(), True
        fault.notes.append(f"answered a query on serving.{self.p.name} ({rows[0][0]} windows)")


def speed_log_evidence(cfg: TidewaterConfig, p: Pipeline, lines: int = 4000) -> str:
    """Why the speed job did not recover, on one line: ``job_evidence`` of its log's tail (error lines,
    the JVM's fatal banner, its last micro-batches), each distinct line once."""
    kept = job_evidence(speed_process(cfg, p).tail(lines), head=700, tail=800).splitlines()
    return " | ".join(dict.fromkeys(kept))
