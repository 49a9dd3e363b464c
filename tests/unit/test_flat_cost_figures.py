"""Scenario 8's figures from micro-batch records (pure functions): the history each micro-batch saw,
and the flatness ratio over full-size micro-batches."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from benchmarks.progress import batch_growth
from benchmarks.s8_flat_cost import history_series

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 25, 12, 0)


def test_history_counts_the_rows_written_before_each_batch_that_read_input() -> None:
    batches = [(T0, 4.0, 500), (T0 + timedelta(seconds=5), 0.2, 0), (T0 + timedelta(seconds=6), 3.0, 500),
               (T0 + timedelta(seconds=9), 1.0, 120)]
    assert history_series(batches, before=1_000) == [(1_000, 4.0), (1_500, 3.0), (2_000, 1.0)]


def test_flatness_compares_the_last_tenth_of_full_batches_with_the_first_leaving_the_warm_up_out() -> None:
    durations = [30.0] + [2.0] * 10 + [3.0] * 10  # the first full batch carries the JVM's warm-up
    batches = [(T0 + timedelta(seconds=i), d, 500) for i, d in enumerate(durations)] + [(T0 + timedelta(hours=1), 9.0, 7)]
    growth = batch_growth(batches, 500)
    assert growth["full_batches"] == 20
    assert (growth["first_10pct_s"], growth["last_10pct_s"], growth["last_over_first"]) == (2.0, 3.0, 1.5)
    assert batch_growth(batches[:2], 500)["last_over_first"] is None  # one full batch left: no figure
