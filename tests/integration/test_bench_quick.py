"""The benchmark harness in quick mode (scenarios 1-5, 7, 8 and 10; 6 and 9 need the Flink venv) produces correct answers.

One harness run (its own isolated stack: temp data folder, free ports, real Kafka, metastore,
Spark, Delta) feeds one test per scenario. Each asserts that the scenario ran and every one of its
correctness checks passed; timings are never asserted. A scenario whose dependency has not landed
(batch layer, replay, Thrift server) is skipped with the harness's reason.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]
QUICK = [1, 2, 3, 4, 5, 7, 8, 10]


@pytest.fixture(scope="module")
def quick_run() -> dict[int, dict[str, Any]]:
    from benchmarks.harness import run_benchmarks

    run = run_benchmarks("quick", QUICK, write=False)
    assert run["machine"]["cores"], "machine facts recorded"
    # the yardstick of a comparison between runs: the machine's own speed, and the stack's settings as
    # the speed job saw them (the tests' JVM options come from the environment, tests/conftest.py)
    assert run["machine"]["cpu_probe"]["python_mops"] > 0 and run["cpu_probe_at_end"]["sha256_mb_s"] > 0
    assert run["settings"]["jvm_options"] == os.environ["TIDEWATER_JVM_OPTIONS"]
    assert run["settings"]["env_overrides"]["TIDEWATER_JVM_OPTIONS"] == os.environ["TIDEWATER_JVM_OPTIONS"]
    return {r["id"]: r for r in run["results"]}


@pytest.mark.parametrize("scenario", QUICK)
def test_quick_scenario_is_correct(quick_run: dict[int, dict[str, Any]], scenario: int) -> None:
    result = quick_run[scenario]
    # every quick scenario must run: a skip here is a regression (an import error once hid scenario 4)
    assert result["status"] != "skipped", f"scenario {scenario} skipped: {'; '.join(result['notes'])}"
    failed = [c for c in result["checks"] if not c["ok"]]
    assert result["status"] == "ok", f"scenario {scenario} {result['status']}: {result['notes']} failed checks {failed}"
    assert result["checks"] and not failed
