"""The speed job's restart budget: a few restarts per time window, not per process lifetime."""

from __future__ import annotations

import pytest

from spark_jobs.speed.restart_budget import RestartBudget

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_failure_repeating_right_after_each_restart_spends_the_budget() -> None:
    clock = Clock()
    budget = RestartBudget(limit=4, window_s=600.0, clock=clock)
    allowed = []
    for _ in range(6):
        allowed.append(budget.allow())
        clock.now += 15.0
    assert allowed == [True, True, True, True, False, False]
    assert budget.used() == 4


def test_failures_further_apart_than_the_window_never_end_the_job() -> None:
    clock = Clock()
    budget = RestartBudget(limit=4, window_s=600.0, clock=clock)
    for _ in range(20):  # two restarts (a failure and SPARK-55271's NPE) every 5 minutes, for 100 minutes
        assert budget.allow() and budget.allow()
        clock.now += 300.0
    assert budget.used() == 4  # the last two pairs, 300 s apart, are inside the window


def test_the_window_slides_restarts_out_one_by_one() -> None:
    clock = Clock()
    budget = RestartBudget(limit=2, window_s=100.0, clock=clock)
    assert budget.allow()
    clock.now = 60.0
    assert budget.allow() and not budget.allow()
    clock.now = 100.0  # the first restart has left the window, the second has not
    assert budget.allow() and not budget.allow()
