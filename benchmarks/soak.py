"""The chaos soak (``make soak`` = ``python -m benchmarks.soak [--quick] [--minutes M] [--rate R] [--seed S]
[--out DIR] [--keep-data]``): hours-long behaviour in half an hour.

On its own isolated stack (``benchmarks/soak_stack.py``: 3 brokers, metastore, Thrift server, job
service, Airflow with the speed supervisor every minute and the batch DAG on a short schedule, every
pipeline's speed job), a paced producer (``benchmarks/paced_producer.py``) sends ``rate`` events/s to
``sensor_readings`` for ``seconds``, while ``benchmarks/soak_chaos.py`` kills -9, each once at a seeded
random moment, the speed job, one broker, the Airflow scheduler and the Thrift server, and
``benchmarks/soak_samples.py`` samples memory (PSS) and consumer lag every 10 s. Then ``benchmarks/soak_checks.py``
(exactly once, serving = oracle) and ``benchmarks/soak_report.py`` (flatness, charts, JSON + Markdown).

``--quick`` (the integration test's): 3 minutes at 1,000 events/s, every fault still injected once;
flatness is recorded but does not gate there (3 minutes with four faults say nothing about growth).
Exit status 1 with a one-line reason if any check failed (exactly once, serving = oracle, a fault not
recovered, flatness).
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import soak_checks
from benchmarks.harness import git_facts, machine_facts
from benchmarks.paced_producer import produce
from benchmarks.result import ScenarioResult
from benchmarks.results_table import write_readme
from benchmarks.soak_chaos import Chaos, plan
from benchmarks.soak_report import failed_flatness, flatness_figures, write_files
from benchmarks.soak_samples import Sampler, micro_batches
from benchmarks.soak_stack import SUPERVISOR_SCHEDULE, TASK_HEARTBEAT_TIMEOUT_S, soak_stack
from benchmarks.stack import one_line_errors, stop_stack_on_term
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import load_pipeline

PIPELINE = "sensor_readings"
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class SoakSettings:
    rate: int = 2000
    seconds: int = 1800
    batch_schedule: str = "*/5 * * * *"
    broker_down_s: float = 60.0
    recovery_timeout_s: float = 600.0
    catch_up_timeout_s: float = 900.0
    min_scheduled_batches: int = 3
    batch_wait_s: float = 600.0  # after the catch-up, at most this long for a scheduled run still to publish
    flatness_gates: bool = True
    brokers: int = 3

    @property
    def warm_up_s(self) -> float:
        return min(300.0, 0.15 * self.seconds)

    @property
    def fault_window(self) -> tuple[float, float]:
        """Faults come after the warm-up and before the last fifth (whose samples judge flatness)."""
        return self.warm_up_s, 0.8 * self.seconds


def settings_for(quick: bool, minutes: float | None, rate: int | None) -> SoakSettings:
    # quick: 1,000 events/s and 450 s to recover. At 2,000 on a slow 2-core CI machine (nine JVMs and
    # Airflow, another test module beside it), the supervisor's new speed job took 222-279 s of a 300 s
    # bound to commit its first micro-batch, and a run went past it.
    # batch_wait_s: a speed job that recovers after the last scheduled batch run began, whose stage found
    # bronze empty, needs the next run: a schedule interval and a run's length
    base = SoakSettings(rate=1000, seconds=180, batch_schedule="*/2 * * * *", broker_down_s=20.0,
                        recovery_timeout_s=450.0, catch_up_timeout_s=300.0, min_scheduled_batches=1,
                        batch_wait_s=360.0, flatness_gates=False) if quick else SoakSettings()
    return SoakSettings(**{**base.__dict__, **({"seconds": int(minutes * 60)} if minutes else {}),
                           **({"rate": rate} if rate else {})})


def run_soak(s: SoakSettings, seed: int, out_dir: Path = RESULTS, keep_data: bool = False) -> dict[str, Any]:
    started_at = datetime.now(UTC)
    res = ScenarioResult(0, "Chaos soak")
    run: dict[str, Any] = {"started_at": started_at.isoformat(timespec="seconds"), "seed": seed,
                           "settings": {**s.__dict__, "warm_up_s": s.warm_up_s, "fault_window_s": s.fault_window,
                                        "supervisor_schedule": SUPERVISOR_SCHEDULE,
                                        "task_heartbeat_timeout_s": TASK_HEARTBEAT_TIMEOUT_S},
                           "machine": machine_facts(), "git": git_facts(), "faults": [], "metrics": {"events": 0}}
    samples: list[dict[str, Any]] = []
    batches: list[tuple[float, float, int]] = []
    try:
        samples, batches = _soak(s, random.Random(seed), res, run, keep_data)
    except Exception as exc:  # the stack or a step broke: a failed soak, with its cause
        res.fail(f"{type(exc).__name__}: {exc}"[:400])
        res.notes.append(traceback.format_exc(limit=5)[-1500:])
    run["flatness"] = flatness_figures(samples, batches, (s.warm_up_s, float(s.seconds)), s.rate)
    flat_failed = failed_flatness(run["flatness"])
    if s.flatness_gates:
        res.check("flat after the warm-up: memory, micro-batch duration, lag (see flatness)", [], flat_failed)
    res.finish()
    run.update(checks=res.checks, notes=res.notes, ok=res.status == "ok",
               finished_at=datetime.now(UTC).isoformat(timespec="seconds"))
    failed = [c["name"] for c in res.checks if not c["ok"]]
    run["reason"] = None if run["ok"] else (f"failed: {failed[0]}" if failed else res.notes[0])
    stem = f"{started_at:%Y%m%dT%H%M%SZ}-soak{'-quick' if not s.flatness_gates else ''}"
    run["files"] = write_files(run, samples, batches, out_dir, stem)
    if s.flatness_gates and out_dir == RESULTS:  # a full soak into the repository's results

        write_readme()
    return run


def _soak(s: SoakSettings, rng: random.Random, res: ScenarioResult, run: dict[str, Any],
          keep_data: bool) -> tuple[list[dict[str, Any]], list[tuple[float, float, int]]]:
    stack_started = time.monotonic()
    with soak_stack(s.batch_schedule, PIPELINE, keep=keep_data) as cfg:
        p = load_pipeline(PIPELINE, cfg.pipelines)
        run["metrics"]["stack_start_s"] = round(time.monotonic() - stack_started, 1)
        since = datetime.now(UTC).replace(tzinfo=None)
        t0 = time.time()
        chaos = Chaos(cfg, p, rng, s.broker_down_s, s.recovery_timeout_s)
        chaos.start(plan(rng, *s.fault_window), t0)
        sampler = Sampler(cfg, p, t0)
        sampler.start()
        sent: dict[str, Any] = {}
        producer = threading.Thread(target=_produce, args=(produce, cfg, p.topic, s, sent), daemon=True)
        producer.start()
        producer.join()
        produced_s = time.time() - t0
        run["faults"] = chaos.join(s.recovery_timeout_s + 300)
        if "error" in sent:
            raise RuntimeError(sent["error"])
        events = sent["chunks"][-1][0]
        run["metrics"].update(events=events, achieved_rate=round(events / produced_s), produced_s=round(produced_s, 1))
        res.check("the producer reached >= 95% of the asked rate", f">= {0.95 * s.rate:.0f}/s",
                  run["metrics"]["achieved_rate"], run["metrics"]["achieved_rate"] >= 0.95 * s.rate)
        for fault in run["faults"]:
            res.check(f"{fault['kind']} killed (-9) and recovered ({fault['recovered_by'] or 'not recovered'})",
                      True, bool(fault["ok"] and fault["injected_s"] is not None and fault["recovered_s"] is not None))
        run["metrics"]["catch_up_s"] = soak_checks.settle(cfg, p, res, s.catch_up_timeout_s, since,
                                                           batch_wait_s=s.batch_wait_s)
        samples = sampler.finish()
        batches = micro_batches(cfg, p, t0)
        run["metrics"]["micro_batches"] = len(batches)
        run["metrics"].update(soak_checks.final_batch(cfg, p, res, since))
        res.check(f"the batch DAG published on its schedule ({s.batch_schedule}) during the soak",
                  f">= {s.min_scheduled_batches}", run["metrics"]["scheduled_runs_published"],
                  run["metrics"]["scheduled_runs_published"] >= s.min_scheduled_batches)
        run["metrics"]["jdbc_caught_up_s"] = soak_checks.jdbc_caught_up(cfg, p, res)
        run["metrics"]["exactly_once"] = soak_checks.exactly_once(cfg, p, res, events)
        run["metrics"]["oracle"] = soak_checks.oracle(cfg, p, res)
    return samples, batches


def _produce(produce: Any, cfg: Any, topic: str, s: SoakSettings, out: dict[str, Any]) -> None:
    try:
        out["chunks"], _ = produce(cfg, topic, s.rate, s.seconds, "soak-")
    except Exception as exc:  # undelivered events: the soak fails with this reason
        out["error"] = f"{type(exc).__name__}: {exc}"


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak",
                                description="chaos soak on an isolated 3-broker stack (writes benchmarks/results/)")
    p.add_argument("--quick", action="store_true", help="3 minutes at 1,000 events/s, each fault once, flatness not gating (CI)")
    p.add_argument("--minutes", type=float, help="how long the producer sends (default 30; quick 3)")
    p.add_argument("--rate", type=int, help="events per second (default 2000; quick 1000)")
    p.add_argument("--seed", type=int, help="seed of the fault plan (default: a new one, printed)")
    p.add_argument("--out", help="folder for the result files (default benchmarks/results/)")
    p.add_argument("--keep-data", action="store_true", help="keep the temporary data folder for inspection")
    args = p.parse_args(argv)
    if (args.minutes is not None and args.minutes <= 0) or (args.rate is not None and args.rate <= 0):
        raise TidewaterError("soak: --minutes and --rate must be positive")
    stop_stack_on_term("soak")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    settings = settings_for(args.quick, args.minutes, args.rate)
    print(f"soak: seed {seed}, {settings.rate} events/s for {settings.seconds} s (reproduce the fault plan with "
          f"--seed {seed})", flush=True)
    run = run_soak(settings, seed, Path(args.out) if args.out else RESULTS, keep_data=args.keep_data)
    print(f"results: {run['files']['markdown']}")
    if not run["ok"]:
        print(f"tidewater: soak {run['reason']}", file=sys.stderr)
        return 1
    print("soak: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
