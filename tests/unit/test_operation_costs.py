"""The per-operation cost summary of ``make chaos`` (``benchmarks.chaos.seconds_by_operation``), and the replay's
Spark start beside its job (``spark_jobs.replay.job.in_background``): pure functions and a thread."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from benchmarks.chaos import seconds_by_operation
from spark_jobs.replay.job import in_background


@pytest.fixture(autouse=True)
def process_environment_restored() -> Iterator[None]:
    """``in_background`` sets the driver's process environment (TZ=UTC among others): undone afterwards."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
    time.tzset()


def step(operation: str, seconds: float, **phases: float) -> dict[str, object]:
    return {"operation": operation, "seconds": seconds, "check_seconds": phases}


def test_the_means_are_per_operation_kind_and_over_all_steps() -> None:
    steps = [step("replay", 40.0, wait_caught_up=2.0, invariants=4.0), step("replay", 20.0, invariants=2.0),
             step("produce", 0.1, wait_caught_up=5.0, read_topic=0.2, invariants=3.0)]
    assert seconds_by_operation(steps) == {
        "*": {"count": 3, "operation": 20.0, "check": 5.4},
        "produce": {"count": 1, "operation": 0.1, "check": 8.2},
        "replay": {"count": 2, "operation": 30.0, "check": 4.0}}


def test_steps_recorded_before_the_check_phases_count_no_check_time() -> None:
    assert seconds_by_operation([{"operation": "batch", "seconds": 74.2}]) == {
        "*": {"count": 1, "operation": 74.2, "check": 0.0}, "batch": {"count": 1, "operation": 74.2, "check": 0.0}}


def test_the_spark_start_runs_beside_the_caller_and_its_wait_returns_once_it_ended() -> None:
    release, seen = threading.Event(), []

    def prepare() -> None:
        release.wait(10)
        seen.append(threading.current_thread() is not threading.main_thread())

    ready = in_background(prepare)
    assert seen == []  # the caller goes on (starts the replay job) while it runs
    release.set()
    ready()
    assert seen == [True]


def test_a_failed_spark_start_is_raised_by_the_wait() -> None:
    def prepare() -> None:
        raise RuntimeError("the metastore is not reachable")

    ready = in_background(prepare)
    with pytest.raises(RuntimeError, match="metastore is not reachable"):
        ready()
