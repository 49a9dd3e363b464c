"""A seeded random sequence of operations (``benchmarks/chaos_sequence.py``): produce, kill -9 and restart of the
speed job, replay, rollback, incremental and full batch runs, a publish racing a replay switch, maintenance
(OPTIMIZE, VACUUM with 0 h retention) and a Thrift server restart, with every invariant of
``benchmarks/chaos_invariants.py`` checked against the Kafka log and an oracle after every step.

One stack, two sequences of ``STEPS`` operations: lambda mode on one pipeline, then kappa mode on
another (the seed picks them, so successive runs cover every window kind), under a host zone east of
UTC. Each run draws a new seed; a failure prints it and the operations so far::

    TIDEWATER_TEST_SEED=<seed> .venv/bin/pytest tests/integration/test_operation_sequence.py

``make chaos`` runs the long form (``benchmarks/chaos.py``): every pipeline in both modes.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from benchmarks.chaos_sequence import OperationSequence
from lakehouse.pipeline import available_pipelines, load_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]
HOST_TZ = "Asia/Kolkata"  # UTC+5:30: see the host_time_zone fixture

SEED = int(os.environ.get("TIDEWATER_TEST_SEED") or random.SystemRandom().randrange(2**32))
STEPS = int(os.environ.get("TIDEWATER_SEQUENCE_STEPS") or 15)  # per mode


def test_operation_sequence_keeps_every_invariant(spark: Any, stack: Any) -> None:
    from lakehouse.config import load_config
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.speed.control import stop_speed

    names = random.Random(SEED).sample(sorted(available_pipelines()), 2)
    print(f"seed {SEED}: TIDEWATER_TEST_SEED={SEED} reproduces this sequence ({names[0]} in lambda mode, "
          f"{names[1]} in kappa mode)")
    counts: dict[str, dict[str, int]] = {}
    for mode, name in zip(("lambda", "kappa"), names, strict=True):
        os.environ["TIDEWATER_MODE"] = mode
        try:
            cfg = load_config()
            p = load_pipeline(name, cfg.pipelines)
            ensure_topic(cfg, p.topic)
            sequence = OperationSequence(spark, cfg, p, SEED)
            try:
                counts[f"{mode}/{name}"] = sequence.run(STEPS)
            finally:
                stop_speed(cfg, p)
                costs = [(s["operation"], s["seconds"], round(sum(s["check_seconds"].values()), 1))
                         for s in sequence.steps]
                print(f"seed {SEED}: {mode}/{name} steps (operation, seconds, check seconds): {costs}")
        finally:
            os.environ.pop("TIDEWATER_MODE", None)
    print(f"seed {SEED}: operations {counts}")
    assert sum(sum(c.values()) for c in counts.values()) == 2 * STEPS
