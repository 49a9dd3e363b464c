"""A seeded random sequence of operations on a running stack, with the invariants of
``chaos_invariants`` checked after every step (in the spirit of hypothesis' stateful testing and Jepsen).
Run by tests/integration/test_operation_sequence.py (a short sequence per mode) and ``make chaos``
(``benchmarks.chaos``: every pipeline in both modes).

The operations, each run as a user runs it (the CLI in its own process, kill -9 of a process group):

* ``produce``: events stamped by the wall clock, with out-of-order, late (behind the watermark),
  duplicate (same payload, and same id and time with a different payload), malformed and clock-skewed
  (beyond ``max_future_skew``: quarantined; within it: accepted) records, over random partitions;
* ``kill_speed``: kill -9 of the speed job, then ``tidewater speed start``;
* ``replay`` and ``rollback``: ``tidewater replay <p>`` / ``--rollback``;
* ``batch`` and ``batch_full`` (lambda): ``tidewater batch <p>`` / ``--full``;
* ``publish_during_switch`` (lambda): a batch run and a replay started together;
* ``maintenance``: OPTIMIZE and VACUUM of every table, retention 0 h (Delta's retention check off);
* ``thrift_restart``: kill -9 of the Thrift server, then its start.

A failure names the seed and the operations so far; ``TIDEWATER_TEST_SEED=<seed>`` repeats the sequence.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.chaos_invariants import oracle, problems_by_invariant
from benchmarks.random_streams import KINDS, Scenario, broken, payload, read_topic, send
from benchmarks.stream_oracle import Expected
from infra import job_service
from infra.services import thrift_server
from infra.services.process import ManagedProcess, port_open, wait_until
from lakehouse import naming
from lakehouse.errors import NothingToDo
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import active_version, recorded_previous_version
from spark_jobs.maintenance import job as maintenance
from spark_jobs.speed.control import speed_process, wait_caught_up
from spark_jobs.speed.queries import stateless

SECOND = 1000
WEIGHTS = {"produce": 6, "kill_speed": 2, "replay": 1, "rollback": 1, "batch": 2, "batch_full": 1,
           "publish_during_switch": 1, "maintenance": 1, "thrift_restart": 1}
LAMBDA_ONLY = {"batch", "batch_full", "publish_during_switch"}


def tidewater(*args: str, timeout: float = 1200) -> dict[str, Any]:
    """One CLI command in its own process: its exit code and output (never string-matched for success)."""
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", *args], capture_output=True, text=True,
                         timeout=timeout)
    return {"args": args, "exit": out.returncode, "out": out.stdout[-1500:], "err": out.stderr[-2500:]}


@dataclass
class OperationSequence:
    spark: Any
    cfg: Any
    p: Pipeline
    seed: int
    rng: random.Random = field(init=False)
    done: list[str] = field(default_factory=list)
    at_publish: Expected | None = None  # the oracle over the topic when the last run was published
    produced: list[dict[str, Any]] = field(default_factory=list)  # valid events sent, for duplicates
    counts: dict[str, int] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)  # per step: operation, seconds, each invariant
    on_step: Any = None  # called after each step's checks (``benchmarks.chaos`` writes its results file)
    phases: dict[str, float] = field(default_factory=dict)  # seconds of each phase of the last check

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.seed}/{self.p.name}/{self.cfg.mode}")
        self.scenario = Scenario(self.p, self.rng, int(time.time() * SECOND) - 3_600 * SECOND, keys=3)

    def fail(self, what: str) -> AssertionError:
        return AssertionError(f"[seed {self.seed}, {self.p.name}, {self.cfg.mode} mode] {what}\noperations: "
                              f"{self.done}\nreproduce with TIDEWATER_TEST_SEED={self.seed}")

    def run(self, steps: int) -> dict[str, int]:
        """``steps`` random operations after the first produce and speed start; raises at the first
        operation that fails or invariant that breaks (``steps`` keeps every step done until then)."""
        self.step("start", self.start)
        ops = [op for op in WEIGHTS if self.cfg.mode == "lambda" or op not in LAMBDA_ONLY]
        for _ in range(steps):
            op = self.rng.choices(ops, weights=[WEIGHTS[o] for o in ops])[0]
            if op == "rollback" and recorded_previous_version(self.cfg, self.p.name) is None:
                op = "replay"
            self.counts[op] = self.counts.get(op, 0) + 1
            self.step(op, getattr(self, op))
        return self.counts

    def start(self) -> None:
        """The first produce and the speed start; in lambda mode also the job service, as ``tidewater up`` starts
        it, so batch commands run on its warm driver (the same code path) instead of a new JVM each."""
        if self.cfg.mode == "lambda":
            job_service.start(self.cfg)
        self.produce()
        self.require(tidewater("speed", "start", self.p.name), "speed start")

    def step(self, op: str, action: Any) -> None:
        self.done.append(op)
        started = time.monotonic()
        try:
            action()
        except AssertionError:
            raise
        except Exception as exc:
            raise self.fail(f"operation {op} raised {type(exc).__name__}: {str(exc)[:3000]}") from exc
        seconds, self.phases = round(time.monotonic() - started, 1), {}
        record = {"step": len(self.done), "operation": op, "seconds": seconds, "invariants": self.check(),
                  "check_seconds": self.phases}
        self.steps.append(record)
        if self.on_step is not None:
            self.on_step()

    def require(self, result: dict[str, Any], what: str, also: tuple[int, ...] = ()) -> dict[str, Any]:
        """``result`` of a command that must succeed (exit 0, or one of ``also``)."""
        if result["exit"] not in (0, *also):
            raise self.fail(f"{what} exited {result['exit']}:\n{result['out']}\n{result['err']}")
        return result

    def check(self) -> dict[str, bool | None]:
        """Every invariant once the speed layer caught up: name -> held (None: not applicable yet)."""
        version, mark = active_version(self.cfg, self.p.name), time.monotonic()
        try:
            caught_up = wait_caught_up(self.cfg, self.p, version=version, timeout=600, job_must_run=True)
        except Exception as exc:
            raise self.fail(f"the speed layer stopped: {str(exc)[:3000]}") from exc
        if not caught_up:
            raise self.fail(f"the speed layer (v{version}) did not catch up within 600 s")
        mark = self.phase("wait_caught_up", mark)
        records = read_topic(self.cfg.kafka.bootstrap, self.p.topic)
        mark = self.phase("read_topic", mark)
        found = problems_by_invariant(self.spark, self.cfg, self.p, records, self.at_publish, stateless(self.p))
        self.phase("invariants", mark)
        broken_ = [f"{name}: {problem}" for name, problems in found.items() for problem in problems or []]
        if broken_:
            raise self.fail("invariants broken after the last operation:\n" + "\n".join(broken_[:20]))
        return {name: None if problems is None else not problems for name, problems in found.items()}

    def phase(self, name: str, since: float) -> float:
        """Record the seconds of one phase of the check since ``since``; the time now, for the next phase."""
        now = time.monotonic()
        self.phases[name] = round(now - since, 1)
        return now

    def produce(self) -> None:
        p, rng, now = self.p, self.rng, int(time.time() * SECOND)
        watermark, size = p.watermark_seconds * SECOND, max(p.window.size_seconds, p.window.gap_seconds) * SECOND
        # event ids unique across every sequence on the stack: the two modes of a pipeline share its topic,
        # and an id sent again minutes later with a new event time is a new event to the stream (docs/guarantees.md)
        tag = f"{self.cfg.mode[0]}s{len(self.done)}-"
        valid = [payload(self.scenario, f"{tag}{i}", now - rng.randint(0, 20 * SECOND)) for i in range(rng.randint(10, 40))]
        valid += [payload(self.scenario, f"{tag}o{i}", now - rng.randint(20 * SECOND, watermark // 2))
                  for i in range(rng.randint(0, 5))]
        valid += [payload(self.scenario, f"{tag}l{i}", now - watermark - size - rng.randint(60, 600) * SECOND)
                  for i in range(rng.randint(0, 3))]
        valid += [payload(self.scenario, f"{tag}f{i}", now + rng.randint(0, max(0, p.future_skew_seconds - 5) * SECOND))
                  for i in range(rng.choice([0, 0, 0, 1]))]
        again = rng.sample(self.produced, min(len(self.produced), rng.randint(0, 4)))
        changed = [payload(self.scenario, e[p.event_id], e[p.event_time], key=e[p.keys[0]])
                   for e in rng.sample(self.produced, min(len(self.produced), rng.randint(0, 3)))]
        values = [json.dumps(e).encode() for e in valid + again + changed]
        values += [broken(self.scenario, kind, f"{tag}m{i}")
                   for i, kind in enumerate(rng.sample([*KINDS, "FUTURE_TIMESTAMP"], rng.randint(0, 3)))]
        rng.shuffle(values)
        self.produced += valid
        send(self.cfg.kafka.bootstrap, p.topic, [(rng.randrange(self.cfg.kafka.partitions), v) for v in values])

    def kill_speed(self) -> None:
        proc = speed_process(self.cfg, self.p)
        time.sleep(self.rng.uniform(0, 6))  # at a random point of its micro-batch cycle
        proc.stop(timeout=0, sig=signal.SIGKILL)
        self.require(tidewater("speed", "start", self.p.name), "speed start after kill -9")

    def replay(self) -> None:
        self.require(tidewater("replay", self.p.name), "replay")

    def rollback(self) -> None:
        self.require(tidewater("replay", self.p.name, "--rollback"), "replay --rollback")

    def batch(self, *flags: str) -> None:
        """A batch run; when bronze has not changed since the last publish it ends with nothing to do
        (``NothingToDo``), and what was published stays the oracle's reference."""
        if self.require(tidewater("batch", self.p.name, *flags), f"batch {' '.join(flags)}", (NothingToDo.EXIT_CODE,)
                        )["exit"] == 0:
            self.at_publish = oracle(self.p, read_topic(self.cfg.kafka.bootstrap, self.p.topic))

    def batch_full(self) -> None:
        self.batch("--full")

    def publish_during_switch(self) -> None:
        results: dict[str, dict[str, Any]] = {}
        switch = threading.Thread(target=lambda: results.update(replay=tidewater("replay", self.p.name)))
        switch.start()
        time.sleep(self.rng.uniform(0, 20))
        results["batch"] = tidewater("batch", self.p.name)
        switch.join(1800)
        self.require(results["replay"], "replay")
        if self.require(results["batch"], "batch", (NothingToDo.EXIT_CODE,))["exit"] == 0:
            self.at_publish = oracle(self.p, read_topic(self.cfg.kafka.bootstrap, self.p.topic))

    def maintenance(self) -> None:
        self.spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        with maintenance.vacuum_settings(self.spark):
            for table in maintenance.delta_tables(self.spark):
                self.spark.sql(f"OPTIMIZE {table}").collect()
                self.spark.sql(f"VACUUM {table} RETAIN 0 HOURS").collect()

    def thrift_restart(self) -> None:
        ManagedProcess("thrift_server", naming.run_dir(self.cfg), naming.logs_dir(self.cfg)).stop(
            timeout=0, sig=signal.SIGKILL)
        if not wait_until(lambda: not port_open(self.cfg.thrift.host, self.cfg.thrift.port), 60):
            raise self.fail(f"port {self.cfg.thrift.port} still open a minute after the Thrift server's kill -9")
        thrift_server.start(self.cfg)
