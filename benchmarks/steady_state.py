"""Scenario 3's steady state: the incremental runs of a long-running job service once its JVM has warmed up.

A JVM compiles Spark's own planning code (Catalyst's analyzer, optimizer and expressions, Delta's commit)
as runs exercise it. An incremental run repeats little work per run, so its methods cross the JIT's
thresholds run after run: at 100M bronze events the compiler threads took 14 CPU s in a JVM's second
incremental run and 3 s in its twelfth, and the run's wall time fell from 18 s to 9.5 s
(docs/performance.md). The job service that Airflow's tasks and the CLI attach to is such a JVM. The
steady state is the median of the last rounds; its denominator is the faster of the warm full runs
(the one before the incremental rounds and the one after them), so the figure cannot gain from a slow
full run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.result import ratio


def steady_state(round_seconds: Sequence[float], last: int, warm_full_seconds: Sequence[float]) -> dict[str, Any]:
    """The median of the ``last`` rounds of ``round_seconds`` (of an even count, the slower middle one)
    against the fastest of ``warm_full_seconds``."""
    if not 0 < last <= len(round_seconds) or not warm_full_seconds:
        raise ValueError(f"steady state: {last} last rounds of {len(round_seconds)}, "
                         f"{len(warm_full_seconds)} full runs")
    tail = sorted(round_seconds[-last:])
    median, full = tail[len(tail) // 2], min(warm_full_seconds)
    first = len(round_seconds) - last + 1
    return {"rounds": f"{first}-{len(round_seconds)} of {len(round_seconds)}", "median_seconds": median,
            "full_seconds": full, "ratio": ratio(median, full)}
